"""A trace's agent and its telltale.* values from real SDK spans, in any arrival order."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, set_span_in_context

from tests.app.test_otlp_sdk import SEC, T0, export, read_trace, trace_id_of
from tests.conftest import LiveServer


def recorded(build: Any, resource: dict[str, Any]) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create(resource))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    build(provider.get_tracer("agent-test"))
    provider.shutdown()
    return list(memory.get_finished_spans())


def nested(tracer: Any, spans: list[tuple[str, dict[str, Any]]], **root_kw: Any) -> None:
    """Each span the child of the one before; the first is the root."""
    opened, ctx = [], None
    for depth, (name, attrs) in enumerate(spans):
        kw = root_kw if depth == 0 else {}
        span = tracer.start_span(
            name, context=ctx, start_time=T0 + depth * SEC, attributes=attrs, **kw
        )
        opened.append(span)
        ctx = set_span_in_context(span)
    for depth, span in reversed(list(enumerate(opened))):
        span.end(end_time=T0 + (10 - depth) * SEC)


def test_outermost_agent_span_beats_the_root_service_in_any_order(
    live_server: LiveServer, make_key: Any
) -> None:
    def build(tracer: Any) -> None:
        nested(
            tracer,
            [
                ("POST /chat", {"http.request.method": "POST"}),
                (
                    "invoke_agent planner",
                    {
                        "gen_ai.operation.name": "invoke_agent",
                        "gen_ai.agent.name": "planner",
                        "gen_ai.agent.id": "asst_1",
                        "gen_ai.agent.version": "2",
                    },
                ),
                (
                    "invoke_agent researcher",
                    {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher"},
                ),
                ("chat", {"gen_ai.operation.name": "chat"}),
            ],
            kind=SpanKind.SERVER,
        )

    spans = recorded(build, {"service.name": "gateway", "service.version": "9"})
    key, reader = make_key(role="ingest"), make_key(role="read")
    by_name = {s.name: s for s in spans}
    # Innermost first, then the root (whose service name must not take over), then the rest.
    order = ["chat", "invoke_agent researcher", "POST /chat", "invoke_agent planner"]
    for name in order:
        assert export(live_server, key, [by_name[name]]) == SpanExportResult.SUCCESS
        body = read_trace(live_server, reader, trace_id_of(spans))
    assert (body["agent"], body["agent_version"]) == ("planner", "2")
    assert body["attributes"]["gen_ai.agent.id"] == "asst_1"


def test_openllmetry_agent_before_workflow_and_service_as_fallback(
    live_server: LiveServer, make_key: Any
) -> None:
    def build(tracer: Any) -> None:
        nested(
            tracer,
            [
                (
                    "onboarding.workflow",
                    {"traceloop.span.kind": "workflow", "traceloop.entity.name": "onboarding"},
                ),
                (
                    "helper.agent",
                    {"traceloop.span.kind": "agent", "traceloop.entity.name": "helper"},
                ),
            ],
        )
        nested(tracer, [("plain", {}), ("chat", {"gen_ai.operation.name": "chat"})])

    spans = recorded(build, {"service.name": "onboarder"})
    key, reader = make_key(role="ingest"), make_key(role="read")
    assert export(live_server, key, spans) == SpanExportResult.SUCCESS
    traces = {s.context.trace_id: s for s in spans}
    agents = {read_trace(live_server, reader, format(tid, "032x"))["agent"] for tid in traces}
    assert agents == {"helper", "onboarder"}


def test_telltale_resource_attributes_apply_to_every_trace(
    live_server: LiveServer, make_key: Any
) -> None:
    resource = {
        "service.name": "eval-runner",
        "telltale.source": "eval",
        "telltale.entry_point": "nightly",
        "telltale.agent_version": "rc-3",
        "telltale.task_type": "refund",
        "telltale.score.exact.kind": "true",
        "telltale.score.exact.source": "eval",
    }

    def build(tracer: Any) -> None:
        nested(tracer, [("run", {"telltale.input_hash": "case-1", "telltale.score.exact": 1.0})])
        nested(
            tracer,
            [
                # Trace-level values on the root span win over the resource's.
                ("run", {"telltale.task_type": "lookup", "telltale.decision": "approve"}),
                ("chat", {"gen_ai.operation.name": "chat"}),
            ],
        )

    spans = recorded(build, resource)
    assert export(live_server, make_key(role="ingest"), spans) == SpanExportResult.SUCCESS
    reader = make_key(role="read")
    trace_ids = {format(s.context.trace_id, "032x") for s in spans}
    # The trace with an input hash is the one-span trace; the other has the root's values.
    bodies = sorted(
        (read_trace(live_server, reader, tid) for tid in trace_ids),
        key=lambda b: b["input_hash"] or "",
    )
    for body in bodies:
        assert (body["source"], body["entry_point"]) == ("eval", "nightly")
        assert (body["agent"], body["agent_version"]) == ("eval-runner", "rc-3")
    plain, rooted = bodies[1], bodies[0]
    assert plain["input_hash"] == "case-1" and plain["attributes"]["task_type"] == "refund"
    assert [(s["name"], s["kind"], s["source"]) for s in plain["scores"]] == [
        ("exact", "true", "eval")
    ]
    assert rooted["attributes"]["task_type"] == "lookup"
    assert rooted["attributes"]["decision"] == "approve"
