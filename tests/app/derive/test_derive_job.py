"""derive_pending on traces sent over OTLP: identity, decision, confidence, source, pairs.

Text embeddings are off here (their own tests load the model); everything else runs on
SQLite and PostgreSQL through the real receivers.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.derive.job import derive_pending
from app.models import Trace
from app.models.base import utcnow
from tests.app.derive.otlp_agent import AgentRun, agent_run, send
from tests.conftest import auth
from tests.web.test_pages import login

RULES_API = "/api/v1/project/derived-fields"


def derive(engine: Engine, **kwargs: Any) -> Any:
    """Derive as if every trace settled a minute ago."""
    kwargs.setdefault("text_embeddings", False)
    return derive_pending(engine, now=utcnow() + timedelta(seconds=60), settle_seconds=30, **kwargs)


def stored(engine: Engine, run: AgentRun) -> Trace:
    with Session(engine) as session:
        return session.scalars(select(Trace).where(Trace.trace_id == run.trace_id)).one()


def test_exact_repeats_share_an_identity_paraphrases_do_not(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key = make_key("ingest")
    runs = [
        agent_run("Where is my order 42?"),
        agent_run("  where is MY order 42? "),  # case and spacing only
        agent_run("Where is my order 42?", system="Another system prompt."),
        agent_run("Could you tell me where order 42 is?"),
    ]
    send(client, key, runs)
    report = derive(engine)
    assert report.traces == 4
    hashes = [stored(engine, r).input_hash for r in runs]
    assert hashes[0] is not None and len(hashes[0]) == 32
    assert hashes[0] == hashes[1] == hashes[2]  # system prompt excluded by default
    assert hashes[3] != hashes[0]


def test_volatile_parts_are_excluded(client: TestClient, make_key: Any, engine: Engine) -> None:
    key = make_key("ingest")
    runs = [
        agent_run("Session 3f2b8c1e-9d4a-4e6b-8f00-1234567890ab at 2025-03-01T10:00:00Z: refund 7"),
        agent_run(
            "Session 0a1b2c3d-4e5f-4a6b-9c7d-abcdefabcdef at 2025-06-11T23:59:01.5+02:00: refund 7"
        ),
        agent_run(
            "Session 0a1b2c3d-4e5f-4a6b-9c7d-abcdefabcdef at 2025-06-11T23:59:01.5+02:00: refund 8"
        ),
    ]
    send(client, key, runs)
    derive(engine)
    a, b, c = (stored(engine, r).input_hash for r in runs)
    assert a == b != c


def test_event_only_content_gives_the_span_only_identity_in_either_order(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key = make_key("ingest")
    span_only = agent_run("Weather in Paris?", tools=("get_weather",), answer="Sunny.")
    event_only = agent_run("Weather in Paris?", tools=("get_weather",), answer="Sunny.",
                           capture="event_only")  # fmt: skip
    events_first = agent_run("Weather in Paris?", tools=("get_weather",), answer="Sunny.",
                             capture="event_only")  # fmt: skip
    send(client, key, [span_only, event_only])
    send(client, key, [events_first], logs_first=True)
    derive(engine)
    rows = [stored(engine, r) for r in (span_only, event_only, events_first)]
    assert len({r.input_hash for r in rows}) == 1 and rows[0].input_hash is not None
    assert [r.attributes["decision"] for r in rows] == ["get_weather|stop"] * 3


def test_default_decision_tools_executed_else_requested_then_finish(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key = make_key("ingest")
    requested = agent_run("Order 42 and weather?", tools=("lookup_order", "get_weather"))
    executed = agent_run("Order 42 and weather?", tools=("lookup_order", "get_weather"),
                         tool_spans=True)  # fmt: skip
    plain = agent_run("Hello")
    send(client, key, [requested, executed, plain])
    derive(engine)
    assert stored(engine, requested).attributes["decision"] == "lookup_order>get_weather|stop"
    assert stored(engine, executed).attributes["decision"] == "lookup_order>get_weather|stop"
    assert stored(engine, plain).attributes["decision"] == "|stop"


def test_decision_by_json_path_and_regex_per_agent(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    admin = make_key("admin")
    rules = {"decision": {"agents": {
        "refunds": {"json_path": "$.action"},
        "triage": {"regex": "ACTION: (\\w+)"},
    }}}  # fmt: skip
    assert client.put(RULES_API, json=rules, headers=auth(admin)).status_code == 200
    runs = [
        agent_run("refund me", agent="refunds", answer='Sure: {"action": "refund", "amount": 3}'),
        agent_run("refund me", agent="refunds", answer="no json here"),
        agent_run("triage me", agent="triage", answer="Thinking... ACTION: escalate"),
        agent_run("other", agent="other-agent", answer="hi"),
    ]
    send(client, make_key("ingest"), runs)
    derive(engine)
    decisions = [stored(engine, r).attributes.get("decision") for r in runs]
    assert decisions == ["refund", None, "escalate", "|stop"]


def test_explicit_values_win(client: TestClient, make_key: Any, engine: Engine) -> None:
    given = {"telltale.input_hash": "my-hash", "telltale.decision": "approve",
             "telltale.source": "production", "telltale.counterfactual_of": "abc"}  # fmt: skip
    explicit = agent_run("Where is my order?", root_attributes=given,
                         resource={"deployment.environment": "eval"})  # fmt: skip
    send(client, make_key("ingest"), [explicit])
    derive(engine)
    row = stored(engine, explicit)
    assert row.input_hash == "my-hash"
    assert row.attributes["decision"] == "approve"
    assert row.source == "production" and row.counterfactual_of == "abc"
    # Derived again after a late span: still the given values.
    late = agent_run("x")
    late.spans = late.spans[1:2]
    for span in late.spans:
        span["traceId"] = explicit.trace_id
        span.pop("parentSpanId", None)
        span["parentSpanId"] = explicit.spans[0]["spanId"]
    late.trace_id = explicit.trace_id
    send(client, make_key("ingest"), [late])
    assert stored(engine, explicit).derived_at is None
    derive(engine)
    row = stored(engine, explicit)
    assert (row.input_hash, row.attributes["decision"]) == ("my-hash", "approve")


def test_source_from_deployment_environment(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    runs = [
        agent_run("q", resource={"deployment.environment": "ci"}),
        agent_run("q", resource={"deployment.environment.name": "eval"}),
        agent_run("q", resource={"deployment.environment": "prod"}),
        agent_run("q", resource={"deployment.environment": "ci", "telltale.source": "shadow"}),
    ]
    send(client, make_key("ingest"), runs)
    derive(engine)
    assert [stored(engine, r).source for r in runs] == ["eval", "eval", "production", "shadow"]


def test_confidence_from_logprobs_or_a_configured_field(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    import math

    with_logprobs = agent_run("q", logprobs=[math.log(0.9), math.log(0.5)])
    without = agent_run("q")
    send(client, make_key("ingest"), [with_logprobs, without])
    derive(engine)
    assert stored(engine, with_logprobs).attributes["confidence"] == pytest.approx(0.7)
    assert "confidence" not in stored(engine, without).attributes
    rules = {"confidence": {"field": "$.confidence"}}
    assert client.put(RULES_API, json=rules, headers=auth(make_key("admin"))).status_code == 200
    field = agent_run("q", answer='{"answer": "yes", "confidence": 0.25}')
    send(client, make_key("ingest"), [field])
    derive(engine)
    assert stored(engine, field).attributes["confidence"] == 0.25


def test_counterfactual_pairs_by_input_identity_in_any_order(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    rules = {"counterfactual": {"agent": "support-agent", "baseline_version": "v1",
                                "candidate_version": "v2"}}  # fmt: skip
    assert client.put(RULES_API, json=rules, headers=auth(make_key("admin"))).status_code == 200
    key = make_key("ingest")
    base = agent_run("Where is my order 42?", version="v1")
    cand = agent_run("where is my order 42?", version="v2")
    other = agent_run("Something else", version="v2")
    late_cand = agent_run("Refund order 7", version="v2")
    send(client, key, [base, cand, other, late_cand])
    derive(engine)
    assert stored(engine, cand).counterfactual_of == base.trace_id
    assert stored(engine, other).counterfactual_of is None
    assert stored(engine, base).counterfactual_of is None
    # The baseline of an already derived candidate arrives later: the candidate is paired.
    late_base = agent_run("Refund order 7", version="v1")
    send(client, key, [late_base])
    derive(engine)
    derive(engine)
    assert stored(engine, late_cand).counterfactual_of == late_base.trace_id


def test_only_settled_traces_and_each_once(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    run = agent_run("q")
    send(client, make_key("ingest"), [run])
    assert (
        derive_pending(engine, now=utcnow(), settle_seconds=30, text_embeddings=False).traces == 0
    )
    assert derive(engine).traces == 1
    assert derive(engine).traces == 0
    assert stored(engine, run).derived_at is not None


def _native_llm(trace_id: str, attributes: dict[str, Any]) -> list[dict[str, Any]]:
    body = {"trace_id": trace_id, "span_id": "s0", "kind": "llm", "name": "chat",
            "started_at": "2026-11-29T10:00:00Z", "attributes": attributes}  # fmt: skip
    trace = {"trace_id": trace_id, "agent": "a"}
    return [{"id": f"{trace_id}-t", "type": "trace", "body": trace},
            {"id": f"{trace_id}-s0", "type": "span", "body": body}]  # fmt: skip


# The shapes that raised TypeError/KeyError in the job and stopped it for every project.
ODD_SPANS = {
    "parts-int": {"gen_ai.input.messages": '[{"role":"user","parts":5}]'},
    "call-no-name": {"telltale.tool_calls.requested": [{"id": "c1", "arguments": "{}"}]},
    "event-attrs-list": {"otel.events": [{"name": "gen_ai.user.message", "attributes": [1]}]},
}


def test_every_message_shape_derives_and_other_projects_go_on(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key = make_key("ingest", "odd")
    for trace_id, attrs in ODD_SPANS.items():
        r = client.post("/api/v1/ingest", json={"events": _native_llm(trace_id, attrs)},
                        headers=auth(key))  # fmt: skip
        assert r.json()["accepted"] == 2, r.text
    good = agent_run("Where is my order 42?")
    send(client, make_key("ingest", "other"), [good])
    assert derive(engine).traces == len(ODD_SPANS) + 1
    assert stored(engine, good).input_hash is not None
    with Session(engine) as session:
        rows = session.execute(select(Trace.trace_id, Trace.derived_at, Trace.derive_error)).all()
    assert all(at is not None and error is None for _, at, error in rows), rows


def test_a_trace_that_cannot_be_derived_is_set_aside_with_its_reason(
    client: TestClient, make_key: Any, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A parser bug no fuzzing found yet, stood in for by a derive_trace that raises for one
    # trace: that trace is marked, every other trace of every project is derived.
    from app.derive import job
    from app.derive.failures import DERIVE_FAILED

    real = job.derive_trace

    def flaky(trace: Any, *args: Any) -> Any:
        if trace["trace_id"] == poison.trace_id:
            raise RecursionError("maximum recursion depth exceeded")
        return real(trace, *args)

    poison, good, other = agent_run("q1"), agent_run("q2"), agent_run("q3")
    send(client, make_key("ingest"), [poison, good])
    send(client, make_key("ingest", "p2"), [other])
    monkeypatch.setattr(job, "derive_trace", flaky)
    counted = DERIVE_FAILED.labels(error="RecursionError")._value.get()
    assert derive(engine).traces == 3
    assert derive(engine).traces == 0  # set aside: the next run does not start at it again
    assert stored(engine, good).input_hash and stored(engine, other).input_hash
    marked = stored(engine, poison)
    assert marked.derived_at is not None and marked.input_hash is None
    assert marked.derive_error == "RecursionError: maximum recursion depth exceeded"
    assert DERIVE_FAILED.labels(error="RecursionError")._value.get() == counted + 1
    reader = make_key("read")
    r = client.get(f"/api/v1/traces/{poison.trace_id}", headers=auth(reader))
    assert r.json()["derive_error"] == marked.derive_error
    login(client, reader)
    page = client.get(f"/traces/{poison.trace_id}")
    assert "could not be derived" in page.text and "RecursionError" in page.text
    # Once it can be derived (a fix, then a new span of it), the mark goes.
    monkeypatch.setattr(job, "derive_trace", real)
    late = _native_llm(poison.trace_id, {})[1:]
    client.post("/api/v1/ingest", json={"events": late}, headers=auth(make_key("ingest")))
    assert derive(engine).traces == 1
    assert stored(engine, poison).derive_error is None
