"""The steps monitors see from real SDK span trees: the agent's actions, one error per raise."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.models import Project
from app.monitors.windows import trace_window as windows
from detectors.compounding_errors import CompoundingErrorDetector
from detectors.records import TraceRecord, is_tool_step, step_error
from tests.app.test_otlp_sdk import SEC, T0, export, record
from tests.conftest import LiveServer


def openinference_tree(tracer: Any, n: int) -> None:
    """AGENT -> LLM (-> HTTP POST), CHAIN "tools" -> TOOL raises, LLM; the raise fails
    the CHAIN and the AGENT too, as the instrumentation records an exception it sees."""
    t = T0 + n * 100 * SEC

    def child(name: str, parent: Any, start: int, attrs: dict[str, Any], **kw: Any) -> Any:
        ctx = set_span_in_context(parent)
        return tracer.start_span(name, context=ctx, start_time=t + start, attributes=attrs, **kw)

    failed = Status(StatusCode.ERROR, "KeyError: 'order'")
    agent = tracer.start_span(
        "agent", start_time=t, attributes={"openinference.span.kind": "AGENT"}
    )
    llm = child("llm", agent, SEC, {"openinference.span.kind": "LLM"})
    http = child("POST", llm, SEC + 1, {"http.request.method": "POST"}, kind=SpanKind.CLIENT)
    http.end(end_time=t + 2 * SEC)
    llm.end(end_time=t + 2 * SEC)
    chain = child("tools", agent, 3 * SEC, {"openinference.span.kind": "CHAIN"})
    tool = child("lookup", chain, 3 * SEC + 1, {"openinference.span.kind": "TOOL"})
    for span in (tool, chain):
        span.record_exception(KeyError("order"), timestamp=t + 4 * SEC)
        span.set_status(failed)
        span.end(end_time=t + 4 * SEC)
    final = child("llm", agent, 5 * SEC, {"openinference.span.kind": "LLM"})
    final.end(end_time=t + 6 * SEC)
    agent.set_status(failed)
    agent.end(end_time=t + 7 * SEC)


def load(engine: Engine) -> list[TraceRecord]:
    with Session(engine) as session:
        pid = session.scalar(select(Project.id).where(Project.name == "p1"))
        return windows.load_trace_records(
            session,
            windows.TraceSelection(project_id=pid),
            start=datetime(2023, 1, 1, tzinfo=UTC),
            end=datetime(2024, 1, 1, tzinfo=UTC),
        )


def test_one_tool_exception_per_trace_is_one_error_step(
    live_server: LiveServer, make_key: Any, engine: Engine
) -> None:
    spans = record(lambda tracer: [openinference_tree(tracer, n) for n in range(40)])
    assert export(live_server, make_key(role="ingest"), spans) == SpanExportResult.SUCCESS
    traces = load(engine)
    assert len(traces) == 40
    for trace in traces:
        assert trace.status == "error"
        assert [(s.name, s.kind, step_error(s)) for s in trace.steps] == [
            ("llm", "llm", False),
            ("lookup", "tool", True),
            ("llm", "llm", False),
        ]
        assert trace.steps[1].error_type == "KeyError" and is_tool_step(trace.steps[1])
    # No decision step fails after an earlier error: FM-1 has nothing to count, let alone fire.
    result = CompoundingErrorDetector().test([], traces)
    assert not result.fired and result.evidence["by_depth"] == []


def test_offered_tools_on_an_llm_span_are_no_tool_call(
    live_server: LiveServer, make_key: Any, engine: Engine
) -> None:
    def build(tracer: Any) -> None:
        root = tracer.start_span(
            "agent", start_time=T0, attributes={"gen_ai.operation.name": "invoke_agent"}
        )
        chat = tracer.start_span(
            "chat gpt-4o",
            context=set_span_in_context(root),
            start_time=T0 + SEC,
            # OpenLIT: the tools offered to the model, on the LLM span.
            attributes={"gen_ai.operation.name": "chat", "gen_ai.tool.name": "search, lookup"},
        )
        chat.end(end_time=T0 + 2 * SEC)
        root.end(end_time=T0 + 3 * SEC)

    assert export(live_server, make_key(role="ingest"), record(build)) == SpanExportResult.SUCCESS
    (trace,) = load(engine)
    assert [(s.kind, s.tool_name, is_tool_step(s)) for s in trace.steps] == [("llm", None, False)]
