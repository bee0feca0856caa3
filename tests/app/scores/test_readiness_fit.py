"""Readiness that fits the agent (app/monitors/readiness/fit.py): traces sent to the native
API are told the native field, never an OTel variable; a project-wide score-role change is
offered only where the mode needs the score, naming the other modes it changes; a need the
verdict can do without is marked optional."""

from __future__ import annotations

from datetime import timedelta

from tests.app.scores.test_readiness import (
    NOW,
    by_need,
    ingest,
    plain_llm_traces,
    readiness,
    setup,
    texts,
)


def _native(events: list[dict]) -> list[dict]:
    """The same traces sent to POST /api/v1/ingest by a team's own code (no OTLP)."""
    for e in events:
        if e["type"] == "trace":
            e["body"].pop("attributes", None)
    return events


def _judge_scores(n: int) -> list[dict]:
    return [
        {"id": f"sc-{i}", "type": "score", "body": {
            "trace_id": f"t{i:04d}", "name": "helpfulness", "value": 0.8, "kind": "proxy",
            "source": "online", "created_at": (NOW - timedelta(minutes=30)).isoformat()}}
        for i in range(30, n)
    ]  # fmt: skip


def test_native_traces_are_told_native_fields_not_otel_variables(client, make_key):
    admin, reader, monitors = setup(client, make_key)
    ingest(client, admin, _native(plain_llm_traces(120, start=NOW - timedelta(minutes=150))))
    fm3 = by_need(readiness(client, reader, monitors, "FM-3"))
    said = texts(fm3["input_hash"])
    assert '"input_hash" on the trace event' in said
    assert "OTEL_" not in said and "TRACELOOP" not in said and "telltale.input_hash" not in said
    assert "input_identity" in said  # a derived-field rule works for any traces
    for need in fm3.values():
        assert "OTEL_" not in texts(need), need


def test_score_roles_are_offered_only_where_the_mode_needs_them(client, make_key):
    admin, reader, monitors = setup(client, make_key)
    ingest(client, admin, plain_llm_traces(120, start=NOW - timedelta(minutes=150), tools=3))
    ingest(client, admin, _judge_scores(120))
    fm2 = readiness(client, reader, monitors, "FM-2")
    assert fm2["status"] == "partial"  # steps and tool calls: its cascade test runs
    true2 = by_need(fm2)["true_scores"]
    assert true2["optional"] and "score-roles" not in texts(true2)
    true4 = by_need(readiness(client, reader, monitors, "FM-4"))["true_scores"]
    assert not true4["optional"]
    roles = [r["text"] for r in true4["remedies"] if r["how"] == "score_roles"]
    assert roles and "helpfulness" in roles[0] and "changes what FM-2" in roles[0], roles
