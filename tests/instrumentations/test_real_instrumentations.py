"""Real instrumentation libraries, in their own venvs, exporting to a live Telltale.

Each test runs an agent script (``agents/``) with a library's current release around the
real ``openai`` client (or LangChain / LangGraph) against the fake OpenAI server, exporting
OTLP/HTTP to Telltale at the library's default settings; then reads the stored traces back
through the API and turns them into the records the detectors see (``from_rows``), so what
is asserted is what the monitors will count: the agent, the steps, the tool calls requested
and executed, one error per real failure, models and tokens; and that the exporters logged
no error (a 404 on ``/v1/logs`` or ``/v1/metrics`` shows up there).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from app.derive.job import derive_pending
from app.ingest.session_ids import SESSION_KEYS, USER_KEYS
from app.models.base import utcnow
from app.pricing.table import shipped_table
from detectors.records import TraceRecord, from_rows, step_error
from detectors.requested_tools import RESULT_ERROR
from tests.conftest import LiveServer, auth
from tests.instrumentations.conftest import RunAgent
from tests.instrumentations.fake_openai import FakeOpenAI

# Real libraries in their own venvs, each agent a subprocess: end to end, not the inner loop.
pytestmark = pytest.mark.slow

Stored = Callable[[], list[dict[str, Any]]]
EXPORT_ERROR = re.compile(
    r"Failed to export|Exception while exporting|exporting .* failed|Transient error|Header format invalid",
    re.I,
)
REQUEST_MODEL, RESPONSE_MODEL = "gpt-4o-mini", "gpt-4o-mini-2024-07-18"
# The fake server's usage: 10 tokens per input message, 5 per tool call asked + 5.
FIRST_CALL = (20, 15, 35)  # system + user in; two tool calls out
SECOND_CALL = (50, 5, 55)  # + the assistant message and two tool results in


def records(traces: list[dict[str, Any]]) -> list[TraceRecord]:
    spans = [{**s, "trace_id": t["trace_id"]} for t in traces for s in t["spans"]]
    scores = [{**s, "trace_id": t["trace_id"]} for t in traces for s in t["scores"]]
    return from_rows(traces, spans, scores)


def no_export_errors(done: subprocess.CompletedProcess[str]) -> None:
    bad = [line for line in done.stderr.splitlines() if EXPORT_ERROR.search(line)]
    assert not bad, "exporter errors:\n" + "\n".join(bad)


def shape(rec: TraceRecord) -> list[tuple[str, str | None, str]]:
    return [(s.kind, s.tool_name, s.status) for s in rec.steps]


def usage(step: Any) -> tuple[Any, Any, Any]:
    a = step.attributes
    return (
        a.get("gen_ai.usage.input_tokens"),
        a.get("gen_ai.usage.output_tokens"),
        a.get("gen_ai.usage.total_tokens"),
    )


def llm_columns(trace: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The normalised columns of the trace's LLM spans, as the trace detail API answers."""
    cols = ("request_model", "response_model", "input_tokens", "output_tokens", "total_tokens")
    spans = sorted((s for s in trace["spans"] if s["kind"] == "llm"), key=lambda s: s["started_at"])
    for s in spans:
        assert s["latency_ms"] is not None and s["latency_ms"] >= 0
    return [tuple(s[c] for c in cols) for s in spans]


def assert_session(
    traces: list[dict[str, Any]],
    carried: set[tuple[str, frozenset[str]]],
    users: tuple[str | None, str | None] = ("user-7", "user-7"),
) -> None:
    """Both traces of the plain_loop agent are turns of its conversation, of its user
    (agents/plain_loop.py) where ``users`` says the library sent one; ``carried`` says
    which spans (by kind) sent which of the session and user attributes."""
    assert [t["session_id"] for t in traces] == ["conv-support-1"] * 2
    assert tuple(t["user_id"] for t in traces) == users
    ids = (*SESSION_KEYS, *USER_KEYS)
    got = {(s["kind"], frozenset(k for k in ids if k in s["attributes"]))
           for t in traces for s in t["spans"]}  # fmt: skip
    assert got == carried, got


def assert_plain_client_traces(traces: list[dict[str, Any]], agent: str) -> None:
    """The plain_loop agent: a tool loop with requested calls, then one failed call."""
    assert llm_columns(traces[0]) == [
        (REQUEST_MODEL, RESPONSE_MODEL, *FIRST_CALL),
        (REQUEST_MODEL, RESPONSE_MODEL, *SECOND_CALL),
    ]
    loop, failing = records(traces)
    assert (loop.agent, failing.agent) == (agent, agent)
    # No tool spans: the calls come from the first call's output messages, their outcomes
    # from the tool results in the second call's input.
    assert shape(loop) == [
        ("llm", None, "ok"),
        ("tool", "get_weather", "ok"),
        ("tool", "lookup_order", "error"),
        ("llm", None, "ok"),
    ]
    for tool in loop.steps[1:3]:
        assert tool.attributes["requested"] is True
    assert loop.steps[2].error_type == RESULT_ERROR
    assert [s.index for s in loop.steps if step_error(s)] == [2]
    assert loop.status == "ok"
    first, second = loop.steps[0], loop.steps[3]
    for step in (first, second):
        assert step.attributes["gen_ai.request.model"] == REQUEST_MODEL
        assert step.attributes["gen_ai.response.model"] == RESPONSE_MODEL
    assert (usage(first), usage(second)) == (FIRST_CALL, SECOND_CALL)
    # One HTTP 500: one failed step, with one clean error type, and a failed trace.
    assert shape(failing) == [("llm", None, "error")]
    assert failing.steps[0].error_type == "openai.InternalServerError"
    assert failing.status == "error"


def test_otel_openai_v2_span_only(run_agent: RunAgent, stored: Stored, engine: Engine) -> None:
    done = run_agent("otel", "otel_openai")
    no_export_errors(done)
    traces = stored()
    assert_plain_client_traces(traces, "support-agent")
    # The application's invoke_agent span names the conversation and the user; openai-v2's
    # chat spans carry neither.
    agent_ids = frozenset({"gen_ai.conversation.id", "user.id"})
    assert_session(traces, {("agent", agent_ids), ("llm", frozenset())})
    # The GenAI conventions send tokens, not money: the derive job prices the calls from
    # the shipped table (gpt-4o-mini: $0.15 in, $0.60 out per million tokens).
    derive_pending(engine, now=utcnow() + timedelta(minutes=5), text_embeddings=False)
    loop, failing = stored()
    priced = [(s["cost"], s["cost_source"]) for s in loop["spans"] if s["kind"] == "llm"]
    assert priced == [(pytest.approx(12e-6), shipped_table().label),
                      (pytest.approx(10.5e-6), shipped_table().label)]  # fmt: skip
    assert [s["cost_source"] for s in failing["spans"] if s["kind"] == "llm"] == ["no tokens"]


def test_otel_openai_v2_event_only_content_arrives_on_v1_logs(
    run_agent: RunAgent, stored: Stored, live_server: LiveServer, make_key: Any, engine: Any
) -> None:
    done = run_agent(
        "otel", "otel_openai", OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="event_only"
    )
    no_export_errors(done)
    traces = stored()
    loop, failing = records(traces)
    # Content is in the log events, not on the spans: steps, models, tokens and the
    # failure still map; the messages are the LLM spans' joined events.
    assert [s.kind for s in loop.steps] == ["llm", "llm"]
    assert "gen_ai.output.messages" not in loop.steps[0].attributes
    assert (usage(loop.steps[0]), usage(loop.steps[1])) == (FIRST_CALL, SECOND_CALL)
    assert shape(failing) == [("llm", None, "error")]
    reader = make_key(role="read")
    with httpx.Client(base_url=live_server.url, headers=auth(reader)) as c:
        events = c.get(f"/api/v1/traces/{loop.trace_id}/span-events").json()
    llm_ids = {s["span_id"] for s in traces[0]["spans"] if s["kind"] == "llm"}
    assert set(events) == llm_ids
    names = {ev["name"] for evs in events.values() for ev in evs}
    assert "gen_ai.client.inference.operation.details" in names
    blob = str(events)
    assert "lookup_order" in blob and "It is sunny in Paris" in blob
    # What the monitors read: the calls the events carry are the trace's tool steps, as
    # with span_only capture (windows join them onto their LLM span).
    from datetime import UTC, datetime, timedelta

    from sqlalchemy.orm import Session

    from app.monitors.windows import trace_window as windows

    now = datetime.now(UTC)
    with Session(engine) as session:
        window = windows.load_trace_records(
            session, windows.TraceSelection(project_id=1), start=now - timedelta(hours=1), end=now
        )
    loop_window = next(r for r in window if r.trace_id == loop.trace_id)
    assert shape(loop_window) == [
        ("llm", None, "ok"),
        ("tool", "get_weather", "ok"),
        ("tool", "lookup_order", "error"),
        ("llm", None, "ok"),
    ]


def test_openinference_openai(run_agent: RunAgent, stored: Stored) -> None:
    done = run_agent("openinference", "openinference_openai")
    no_export_errors(done)
    traces = stored()
    assert_plain_client_traces(traces, "support-agent")
    # using_session / using_user reach the instrumentor's LLM spans, not the application's
    # own agent span: the trace takes them from a child (the root names none).
    llm_ids = frozenset({"session.id", "user.id"})
    assert_session(traces, {("agent", frozenset()), ("llm", llm_ids)})


def test_openinference_langchain_tool_loop(
    run_agent: RunAgent, stored: Stored, fake_openai: FakeOpenAI
) -> None:
    done = run_agent("openinference", "openinference_langchain")
    no_export_errors(done)
    traces = stored()
    loop, failing = records(traces)
    # The graph's name is the agent (the outermost AGENT span), not the inner "agent" node.
    assert (loop.agent, failing.agent) == ("support-agent", "support-agent")
    # Wrappers (AGENT, CHAIN "tools", "call_model", "Prompt", "should_continue") are not
    # steps; the tools ran as TOOL spans, so no requested-call steps are added. ToolNode
    # runs the two tools in parallel threads: either may start first.
    got = shape(loop)
    assert [got[0], sorted(got[1:3]), got[3]] == [
        ("llm", None, "ok"),
        [("tool", "get_weather", "ok"), ("tool", "lookup_order", "error")],
        ("llm", None, "ok"),
    ]
    assert [s.error_type for s in loop.steps if step_error(s)] == ["ConnectionError"]
    assert not any(s.attributes.get("requested") for s in loop.steps)
    assert loop.status == "ok"
    for step in (loop.steps[0], loop.steps[3]):
        assert step.attributes["gen_ai.response.model"] == RESPONSE_MODEL
        assert step.attributes["gen_ai.request.model"] == REQUEST_MODEL
    assert llm_columns(traces[0]) == [
        (REQUEST_MODEL, RESPONSE_MODEL, 10, 15, 25),
        (REQUEST_MODEL, RESPONSE_MODEL, 40, 5, 45),
    ]
    # LangGraph sends no system prompt: 1 then 4 input messages.
    assert usage(loop.steps[0]) == (10, 15, 25)
    assert usage(loop.steps[3]) == (40, 5, 45)
    # The 500 fails the LLM step; every wrapper above it inherits it and is no step.
    assert shape(failing) == [("llm", None, "error")]
    assert failing.status == "error"
    assert len(fake_openai.requests) == 3


def test_openlit_openai(run_agent: RunAgent, stored: Stored) -> None:
    done = run_agent("openlit", "openlit_openai")
    no_export_errors(done)  # its metrics and GenAI events go to /v1/metrics and /v1/logs
    traces = stored()
    loop, failing = records(traces)
    # No agent span: the application_name (service.name) is the agent.
    assert (loop.agent, failing.agent) == ("support-agent", "support-agent")
    # The root span and OpenLIT's httpx POST spans under each LLM span are no steps. The
    # calls the model asked for are the LLM span's gen_ai.tool.call.id / .name / .args;
    # OpenLIT puts no tool results on spans, so their outcome is unknown (not an error).
    assert shape(loop) == [
        ("llm", None, "ok"),
        ("tool", "get_weather", "ok"),
        ("tool", "lookup_order", "ok"),
        ("llm", None, "ok"),
    ]
    assert [s.attributes["outcome"] for s in loop.steps[1:3]] == ["unknown", "unknown"]
    assert json.loads(loop.steps[1].attributes["tool_call.arguments"]) == {"city": "Paris"}
    first, second = loop.steps[0], loop.steps[3]
    assert (usage(first), usage(second)) == (FIRST_CALL, SECOND_CALL)
    assert first.attributes["gen_ai.request.model"] == REQUEST_MODEL
    assert first.attributes["gen_ai.response.model"] == RESPONSE_MODEL
    # The local pricing_json: 20/1000 * 0.15 + 15/1000 * 0.6.
    assert abs(first.attributes["gen_ai.usage.cost"] - 0.012) < 1e-9
    llm_spans = [s for s in traces[0]["spans"] if s["kind"] == "llm"]
    assert sorted(round(s["cost"], 6) for s in llm_spans) == [0.0105, 0.012]
    assert shape(failing) == [("llm", None, "error")]
    assert failing.steps[0].error_type == "openai.InternalServerError"
    # OpenLIT sends no session id for a plain OpenAI client: the application's root span
    # names it. The user is the OpenAI request's `user`, which OpenLIT writes only with
    # a response: the failed call's span, and so its trace, has none.
    assert_session(traces, {("step", frozenset({"session.id"})), ("step", frozenset()),
                            ("llm", frozenset({"gen_ai.request.user"})), ("llm", frozenset())},
                   users=("user-7", None))  # fmt: skip


def test_openllmetry_traceloop_openai(run_agent: RunAgent, stored: Stored) -> None:
    done = run_agent(
        "traceloop",
        "traceloop_openai",
        TRACELOOP_BASE_URL=run_agent.telltale_url,  # type: ignore[attr-defined]
        TRACELOOP_HEADERS=f"Authorization=Bearer%20{run_agent.ingest_key}",  # type: ignore[attr-defined]
    )
    no_export_errors(done)
    # The @agent spans name the agent; the LLM spans' gen_ai.completion.N.tool_calls.M.*
    # are the requested calls and gen_ai.prompt.N (role tool) their results.
    traces = stored()
    assert_plain_client_traces(traces, "support-agent")
    # @conversation and the user association reach every span, the agent span included.
    ids = frozenset({"gen_ai.conversation.id", "traceloop.association.properties.user_id"})
    assert_session(traces, {("agent", ids), ("llm", ids)})


def test_openinference_evaluations_become_scores(run_agent: RunAgent, stored: Stored) -> None:
    done = run_agent("openinference", "openinference_evals")
    no_export_errors(done)
    (trace,) = stored()
    got = sorted(
        (s["name"], s["value"], s["label"], s["explanation"], s["source"]) for s in trace["scores"]
    )
    # The label-only "tone" annotation has no number: no score.
    assert got == [
        ("correctness", 0.8, "correct", "names the order", "online"),
        ("helpfulness", 1.0, None, None, "human"),
    ]
    (rec,) = records([trace])
    assert [s.kind for s in rec.steps] == ["llm", "evaluator"]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_fm1_on_real_langchain_traces_independent_vs_compounding(
    run_agent: RunAgent, engine: Any
) -> None:
    """FM-1's default detector on what OpenInference's LangChain instrumentation sends.

    Three runs of 200 traces of a LangGraph loop calling four tools one per turn, its model
    node falling back to its plan on HTTP 500 (``agents/openinference_langchain_chain.py``): tool calls
    fail independently (15%) in all three; model calls fail independently (10%) in two,
    and in the third a failed model call makes the later ones fail with 50%. Read back
    through the monitors' window loader, each trace is the agent's actions only (no
    wrapper spans, no errors inherited by them), so independent failures give a
    compounding ratio near 1 (the flattened span list gave 5.8 for one independent tool
    exception per trace) and the real compounding fires.
    """
    from datetime import UTC, datetime

    from sqlalchemy.orm import Session

    from app.monitors.windows import trace_window as windows
    from detectors.registry import build_detector

    bounds, printed = [], []
    for mode, seed in (("independent", 1), ("independent", 2), ("compounding", 3)):
        start = datetime.now(UTC)
        done = run_agent(
            "openinference", "openinference_langchain_chain",
            FM1_TRACES="200", FM1_MODE=mode, FM1_SEED=str(seed),
        )  # fmt: skip
        no_export_errors(done)
        found = re.search(r"tool failures: (\d+) model failures: (\d+)", done.stdout)
        assert found, done.stdout
        printed.append((int(found.group(1)), int(found.group(2))))
        bounds.append((start, datetime.now(UTC)))
    with Session(engine) as session:
        sel = windows.TraceSelection(project_id=1)
        ref, clean, compounding = (
            windows.load_trace_records(session, sel, start=a, end=b) for a, b in bounds
        )
    for window, (tool_failures, model_failures) in zip(
        (ref, clean, compounding), printed, strict=True
    ):
        assert len(window) == 200
        assert {r.agent for r in window} == {"chain-agent"}
        kinds = Counter(s.kind for r in window for s in r.steps)
        assert kinds == {"tool": 4 * 200, "llm": 5 * 200}
        # One error per failure: the tool that raised, the model call that got the 500;
        # nothing inherited by the graph, node or chain spans above them.
        errors = Counter(s.kind for r in window for s in r.steps if step_error(s))
        assert errors == Counter({"tool": tool_failures, "llm": model_failures})
    detector = build_detector("FM-1", {})
    now = bounds[-1][1].timestamp()
    quiet = detector.test(ref, clean, now=now)
    assert quiet.status == "ok" and not quiet.fired, quiet.evidence
    assert 0.6 <= quiet.statistic <= 1.6, quiet.evidence
    fired = detector.test(ref, compounding, now=now)
    print("FM-1 ratios: reference", quiet.evidence["reference_ratio"],
          "independent", quiet.statistic, "compounding", fired.statistic)  # fmt: skip
    assert fired.fired and fired.statistic > 2.0, fired.evidence
