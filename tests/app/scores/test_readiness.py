"""GET /api/v1/monitors/{id}/readiness: each need present or missing, counted, with remedies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import event

from app.monitors.readiness.report import RUNS_WITH
from detectors import registry
from tests.conftest import auth

NOW = datetime(2026, 11, 2, 12, tzinfo=UTC)


def plain_llm_traces(
    n: int, *, start: datetime, prefix: str = "t", tools: int = 0
) -> list[dict[str, Any]]:
    """What plain openai-v2 spans without content give: one LLM step per trace (and
    ``tools`` tool calls after it), no input identity, no decision, no confidence; stored
    as the OTLP receiver stores a trace (``otel.agent_key``), so remedies speak OTel."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        t = start + timedelta(seconds=60 * i)
        tid = f"{prefix}{i:04d}"
        out.append({"id": f"tr-{tid}", "type": "trace", "body": {
            "trace_id": tid, "agent": "support", "started_at": t.isoformat(),
            "ended_at": (t + timedelta(seconds=2)).isoformat(),
            "attributes": {"otel.agent_key": "support"}}})  # fmt: skip
        out.append({"id": f"sp-{tid}", "type": "span", "body": {
            "trace_id": tid, "span_id": "s1", "kind": "llm", "name": "chat gpt-4o",
            "started_at": t.isoformat(), "ended_at": (t + timedelta(seconds=2)).isoformat()}})  # fmt: skip
        for j in range(tools):
            out.append({"id": f"sp-{tid}-{j}", "type": "span", "body": {
                "trace_id": tid, "span_id": f"s{j + 2}", "kind": "tool", "tool_name": "search",
                "step_index": j + 1, "started_at": t.isoformat(),
                "ended_at": (t + timedelta(seconds=1)).isoformat()}})  # fmt: skip
    return out


def ingest(client: Any, key: str, events: list[dict[str, Any]]) -> None:
    for i in range(0, len(events), 1000):
        r = client.post("/api/v1/ingest", headers=auth(key), json={"events": events[i : i + 1000]})
        assert r.status_code == 200 and not r.json()["rejected"], r.text


def readiness_at(client: Any, key: str, monitor_id: int, now: datetime) -> dict[str, Any]:
    r = client.get(
        f"/api/v1/monitors/{monitor_id}/readiness",
        headers=auth(key),
        params={"now": now.isoformat()},
    )
    assert r.status_code == 200, r.text
    return r.json()


def readiness(client: Any, key: str, monitors: dict[str, Any], fm: str) -> dict[str, Any]:
    return readiness_at(client, key, monitors[fm], NOW)


def by_need(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["need"]: n for n in answer["needs"]}


def texts(need: dict[str, Any]) -> str:
    return " | ".join(r["text"] for r in need["remedies"])


def setup(client: Any, make_key: Any) -> tuple[str, str, dict[str, Any]]:
    admin, reader = make_key(role="admin"), make_key(role="read")
    made = client.post("/api/v1/monitors/defaults", headers=auth(admin), json={}).json()
    return admin, reader, {m["failure_mode"]: m["id"] for m in made["monitors"]}


def test_plain_spans_list_what_is_missing_and_how_to_send_it(client, make_key):
    admin, reader, monitors = setup(client, make_key)
    # 90 traces in the current window (the last 2 h), 30 before it.
    ingest(client, admin, plain_llm_traces(120, start=NOW - timedelta(minutes=150)))
    fm1 = readiness(client, reader, monitors, "FM-1")
    assert fm1["traces"] == 90 and fm1["window"]["end"].startswith("2026-11-02T12:00:00")
    # Steps on every trace, but one step a trace: no tool call after an earlier failure
    # can exist, so the steps cannot feed FM-1 and it says so (not "steps yes 90/90").
    assert fm1["status"] == "missing"
    needs = by_need(fm1)
    assert (needs["steps"]["present"], needs["steps"]["count"], needs["steps"]["of"]) == (
        False,
        90,
        90,
    )
    assert texts(needs["steps"]).startswith("0 of 90 traces make three or more tool calls")
    assert not needs["step_confidence"]["present"]
    assert "telltale.confidence" in texts(needs["step_confidence"])

    fm3 = by_need(readiness(client, reader, monitors, "FM-3"))
    assert readiness(client, reader, monitors, "FM-3")["status"] == "missing"
    for need in ("input_hash", "decision", "output_embedding", "entry_point"):
        assert (fm3[need]["present"], fm3[need]["count"], fm3[need]["of"]) == (False, 0, 90)
    assert "telltale.input_hash" in texts(fm3["input_hash"])
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only" in texts(
        fm3["input_hash"]
    )
    assert "input_identity" in texts(fm3["input_hash"])
    assert "text_embeddings" in texts(fm3["output_embedding"])
    assert "TRACELOOP_TRACE_CONTENT=true" in texts(fm3["output_embedding"])
    assert "decision:" in texts(fm3["decision"])

    fm5 = by_need(readiness(client, reader, monitors, "FM-5"))
    assert fm5["eval_traces"]["detail"] == {"production_traces": 90}
    assert "telltale.source=eval" in texts(fm5["eval_traces"])
    fm7 = by_need(readiness(client, reader, monitors, "FM-7"))
    assert "counterfactual:" in texts(fm7["counterfactual_runs"])
    fm6 = readiness(client, reader, monitors, "FM-6")
    assert (fm6["status"], fm6["traces"]) == ("no_data", None)
    assert "POST /api/v1/embeddings" in texts(by_need(fm6)["stream_embeddings"])
    fm2 = by_need(readiness(client, reader, monitors, "FM-2"))
    assert not fm2["tool_steps"]["present"]
    assert "execute_tool" in texts(fm2["tool_steps"])


def test_needs_become_present_when_the_data_arrives(client, make_key):
    admin, reader, monitors = setup(client, make_key)
    start = NOW - timedelta(minutes=100)
    events = plain_llm_traces(60, start=start)
    ingest(client, admin, events)
    assert readiness(client, reader, monitors, "FM-3")["status"] == "missing"
    # Content capture on: input identities (repeating), decisions, output vectors.
    more = [
        {"id": f"tr2-t{i:04d}", "type": "trace", "body": {
            "trace_id": f"t{i:04d}", "input_hash": f"q{i % 20}",
            "attributes": {"decision": "refund" if i % 2 else "escalate"}}}
        for i in range(60)
    ] + [
        {"id": f"emb-{i}", "type": "embedding", "body": {
            "stream": "support.output", "trace_id": f"t{i:04d}", "vector": [1.0, float(i)]}}
        for i in range(60)
    ]  # fmt: skip
    ingest(client, admin, more)
    fm3 = readiness(client, reader, monitors, "FM-3")
    needs = by_need(fm3)
    assert needs["input_hash"]["count"] == 60 and needs["input_hash"]["detail"] == {
        "repeated_inputs": 20
    }
    assert needs["decision"]["count"] == 60 and needs["output_embedding"]["count"] == 60
    assert all(needs[n]["remedies"] == [] for n in ("input_hash", "decision", "output_embedding"))
    assert fm3["status"] == "partial"  # entry_point still missing
    assert not needs["entry_point"]["present"]


def test_score_needs_follow_the_roles_and_name_the_scores_seen(client, make_key):
    admin, reader, monitors = setup(client, make_key)
    ingest(client, admin, plain_llm_traces(40, start=NOW - timedelta(minutes=90)))
    scores = [
        {
            "trace_id": f"t{i:04d}",
            "name": name,
            "value": 1.0,
            "event_id": f"{name}{i}",
            "created_at": (NOW - timedelta(minutes=30)).isoformat(),
        }
        for i in range(40)
        for name in ("helpfulness", "resolved")
    ]
    assert (
        client.post("/api/v1/scores", headers=auth(admin), json={"scores": scores}).status_code
        == 200
    )
    fm4 = readiness(client, reader, monitors, "FM-4")
    need = by_need(fm4)["true_scores"]
    assert not need["present"]
    role_fix = need["remedies"][0]
    assert role_fix["how"] == "score_roles"
    assert '"resolved": "true"' in role_fix["text"] and "score-roles" in role_fix["text"]
    assert {(s["name"], s["read_as"], s["traces"]) for s in fm4["scores"]} == {
        ("helpfulness", "proxy", 40), ("resolved", "proxy", 40)}  # fmt: skip
    # The role alone: online is not a label source, and the remedy says so.
    put = {"roles": {"resolved": "true", "helpfulness": "proxy"}}
    assert (
        client.put("/api/v1/project/score-roles", headers=auth(admin), json=put).status_code == 200
    )
    need = by_need(readiness(client, reader, monitors, "FM-4"))["true_scores"]
    assert not need["present"]
    assert "from source online are not labels" in need["remedies"][0]["text"]
    put["label_sources"] = ["delayed", "human", "online"]
    assert (
        client.put("/api/v1/project/score-roles", headers=auth(admin), json=put).status_code == 200
    )
    fm7 = by_need(readiness(client, reader, monitors, "FM-7"))
    assert (fm7["true_scores"]["count"], fm7["proxy_scores"]["count"]) == (40, 40)
    assert readiness(client, reader, monitors, "FM-7")["status"] == "partial"  # no decision etc.


def test_readiness_is_a_fixed_number_of_count_queries(client, make_key, engine):
    """Counting is SQL aggregates: the statements do not grow with the window's traces."""
    admin, reader, monitors = setup(client, make_key)
    statements: list[str] = []
    app_engine = client.app.state.engine

    def count(_conn: Any, _cursor: Any, stmt: str, *_: Any) -> None:
        statements.append(stmt)

    ingest(client, admin, plain_llm_traces(20, start=NOW - timedelta(minutes=90)))
    event.listen(app_engine, "before_cursor_execute", count)
    try:
        readiness(client, reader, monitors, "FM-7")
        small = len(statements)
        ingest(client, admin, plain_llm_traces(400, start=NOW - timedelta(minutes=110), prefix="u"))
        statements.clear()
        readiness(client, reader, monitors, "FM-7")
        # 12 counts, plus 2 seeks for where the history begins (app/monitors/windows/history.py)
        # 1 for the monitor's latest run, 1 for the project's paused evaluators and 1 for
        # the traces with three tool calls (FM-1's shape, app/monitors/readiness/fit.py).
        assert len(statements) == small <= 17, (len(statements), small)
        assert not any(
            "FROM spans" in s and "GROUP BY" not in s and "count" not in s.lower()
            for s in statements
        )
    finally:
        event.remove(app_engine, "before_cursor_execute", count)


def test_every_mode_declares_how_it_runs_and_404_auth(client, make_key):
    for fm, cls in registry.DETECTORS.items():
        for group in RUNS_WITH[fm]:
            assert set(group) <= set(cls.needs), (fm, group)
    admin, reader, monitors = setup(client, make_key)
    other = make_key(role="read", project="p2")
    url = f"/api/v1/monitors/{monitors['FM-1']}/readiness"
    assert client.get(url).status_code == 401
    assert client.get(url, headers=auth(other)).status_code == 404
    assert client.get(url, headers=auth(reader), params={"now": "soon"}).status_code == 422


def test_big_windows_count_span_and_score_flags_on_a_stride(client, make_key, monkeypatch):
    from app.monitors.readiness import counts as readiness_counts

    admin, reader, monitors = setup(client, make_key)
    events = plain_llm_traces(90, start=NOW - timedelta(minutes=100))
    ingest(client, admin, events)
    full = by_need(readiness(client, reader, monitors, "FM-2"))["steps"]
    monkeypatch.setattr(readiness_counts, "MAX_TRACES_COUNTED", 25)
    answer = readiness(client, reader, monitors, "FM-2")
    assert answer["traces"] == 90 and 20 <= answer["counted_traces"] <= 25
    sampled = by_need(answer)["steps"]
    # Every trace has a step: the scaled count is the window's, within rounding.
    assert full["count"] == 90 and abs(sampled["count"] - 90) <= 4, sampled
    assert not by_need(answer)["tool_steps"]["present"]


def test_too_few_or_constant_signals_are_missing_and_say_why(client, make_key):
    admin, reader, monitors = setup(client, make_key)
    # 10 traces in the window: steps are there, too few for a verdict.
    ingest(client, admin, plain_llm_traces(10, start=NOW - timedelta(minutes=60)))
    steps = by_need(readiness(client, reader, monitors, "FM-1"))["steps"]
    assert (steps["present"], steps["count"]) == (False, 10)
    assert "a verdict needs 30" in texts(steps)
    # Every trace with the same derived decision: a constant, not a decision.
    same = [
        {"id": f"d-t{i:04d}", "type": "trace", "body": {
            "trace_id": f"t{i:04d}", "attributes": {"decision": "|stop"}}}
        for i in range(10)
    ]  # fmt: skip
    ingest(client, admin, same)
    decision = by_need(readiness(client, reader, monitors, "FM-3"))["decision"]
    assert (decision["present"], decision["count"], decision["detail"]) == (
        False,
        10,
        {"distinct": 1},
    )
    assert "all 10 traces carry the same decision" in texts(decision)


def test_ready_is_not_claimed_when_the_last_run_gave_no_verdict(client, make_key):
    admin, reader, monitors = setup(client, make_key)
    # 90 traces of three tool calls: FM-1 has its steps (partial) but no step follows an
    # error; the project's first trace 9 h back (no verdict before a whole reference).
    ingest(client, admin, plain_llm_traces(1, start=NOW - timedelta(hours=9), prefix="first"))
    ingest(client, admin, plain_llm_traces(120, start=NOW - timedelta(minutes=150), tools=3))
    assert readiness(client, reader, monitors, "FM-1")["status"] == "partial"
    r = client.post(
        f"/api/v1/monitors/{monitors['FM-1']}/run", headers=auth(admin),
        json={"now": NOW.isoformat()},
    )  # fmt: skip
    assert r.status_code == 200 and r.json()["status"] == "insufficient_data", r.text
    answer = readiness(client, reader, monitors, "FM-1")
    assert answer["status"] == "insufficient"
    assert answer["last_run"]["status"] == "insufficient_data"
    assert "after an earlier error" in answer["last_run"]["reason"]


def test_missing_is_not_claimed_when_the_last_run_gave_a_verdict(client, make_key):
    """FM-4 counts labels in the current window; when they stop (its own failure) a run
    still gives a verdict from the labeled reference, and the card must not say 'missing'."""
    from sqlalchemy.orm import Session

    from app.models import DetectorRun, Monitor

    admin, reader, monitors = setup(client, make_key)
    ingest(client, admin, plain_llm_traces(120, start=NOW - timedelta(minutes=150)))
    before = readiness(client, reader, monitors, "FM-4")
    assert before["status"] == "missing", before  # no labels in the current window
    with Session(client.app.state.engine) as session:
        monitor = session.get(Monitor, monitors["FM-4"])
        assert monitor is not None
        session.add(
            DetectorRun(
                project_id=monitor.project_id,
                monitor_id=monitor.id,
                failure_mode="FM-4",
                at=NOW - timedelta(minutes=5),
                window_start=NOW - timedelta(hours=8),
                window_end=NOW - timedelta(minutes=5),
                status="ok",
                statistic=0.09,
                threshold=0.02,
                p_value=0.001,
                fired=True,
                evidence={"estimator": "confidence"},
            )  # fmt: skip
        )
        session.commit()
    after = readiness(client, reader, monitors, "FM-4")
    assert after["status"] == "partial" and after["last_run"]["status"] == "ok"
    labels = by_need(after)["true_scores"]
    assert not labels["present"] and labels["remedies"]  # still says how to send labels
