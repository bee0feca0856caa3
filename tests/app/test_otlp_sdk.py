"""The real OpenTelemetry SDK exporting to a live Telltale over HTTP, on both databases.

Spans are recorded in memory with fixed times, then exported with the SDK's own OTLP/HTTP
exporter (protobuf), or encoded by the SDK's encoder and sent as OTLP JSON, so order and
timing are under the test's control and a retry is the very same batch.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from typing import Any

import httpx
import orjson
import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode, set_span_in_context
from sqlalchemy import Engine, func, select

from app.models import IngestEvent, Score, Span, Trace
from tests.conftest import LiveServer, auth

T0 = 1_700_000_000_000_000_000
SEC = 1_000_000_000


def record(build: Any, service: str = "support-bot") -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": service, "service.version": "1.4.0"})
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    build(provider.get_tracer("agent-test"))
    provider.shutdown()
    return list(memory.get_finished_spans())


def agent_tree(tracer: Any, *, root_fails: bool = False) -> None:
    """invoke_agent -> chat, execute_tool search, execute_tool lookup_order (fails), chat."""
    root = tracer.start_span(
        "invoke_agent support-agent",
        start_time=T0,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support-agent",
            "gen_ai.agent.version": "3.1",
            "telltale.input_hash": "in-42",
            "telltale.entry_point": "web",
            "telltale.score.resolved": 1.0,
            "telltale.score.resolved.kind": "true",
            "telltale.score.csat_proxy": 0.8,
        },
    )
    ctx = set_span_in_context(root)
    children = [
        ("chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}),
        (
            "execute_tool search",
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"},
        ),
        (
            "execute_tool lookup_order",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup_order",
                "error.type": "TimeoutError",
            },
        ),
        ("chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.system": "openai"}),
    ]
    # Ended in reverse so the export order differs from the start order.
    spans = [
        tracer.start_span(name, context=ctx, start_time=T0 + (i + 1) * SEC, attributes=attrs)
        for i, (name, attrs) in enumerate(children)
    ]
    spans[2].set_status(Status(StatusCode.ERROR, "order service timed out"))
    for i, span in reversed(list(enumerate(spans))):
        span.end(end_time=T0 + (i + 1) * SEC + SEC // 2)
    if root_fails:
        root.set_status(Status(StatusCode.ERROR, "gave up"))
    root.end(end_time=T0 + 6 * SEC)


def export(
    server: LiveServer, key: str, spans: Sequence[ReadableSpan], **kw: Any
) -> SpanExportResult:
    exporter = OTLPSpanExporter(
        endpoint=f"{server.url}/v1/traces", headers={"x-api-key": key}, timeout=10, **kw
    )
    try:
        return exporter.export(spans)
    finally:
        exporter.shutdown()


def trace_id_of(spans: Sequence[ReadableSpan]) -> str:
    return format(spans[0].context.trace_id, "032x")


def read_trace(server: LiveServer, key: str, trace_id: str) -> dict[str, Any]:
    response = httpx.get(f"{server.url}/api/v1/traces/{trace_id}", headers=auth(key))
    assert response.status_code == 200, response.text
    return response.json()


def counts(engine: Engine) -> tuple[int, int, int, int]:
    with engine.connect() as conn:
        return tuple(  # type: ignore[return-value]
            conn.scalar(select(func.count()).select_from(m))
            for m in (Trace, Span, Score, IngestEvent)
        )


def assert_agent_tree(body: dict[str, Any], *, root_fails: bool = False) -> None:
    assert (body["agent"], body["agent_version"]) == ("support-agent", "3.1")
    assert body["status"] == ("error" if root_fails else "ok")
    assert (body["input_hash"], body["entry_point"]) == ("in-42", "web")
    assert body["started_at"].startswith("2023-11-14T22:13:20")
    assert body["ended_at"].startswith("2023-11-14T22:13:26")
    spans = body["spans"]
    assert [s["kind"] for s in spans] == ["agent", "llm", "tool", "tool", "llm"]
    assert [s["tool_name"] for s in spans] == [None, None, "search", "lookup_order", None]
    assert [s["status"] for s in spans] == [
        "error" if root_fails else "ok",
        "ok",
        "ok",
        "error",
        "ok",
    ]
    assert spans[3]["error_type"] == "TimeoutError"
    root_id = spans[0]["span_id"]
    assert spans[0]["parent_span_id"] is None
    assert all(s["parent_span_id"] == root_id for s in spans[1:])
    assert spans[4]["attributes"]["gen_ai.provider.name"] == "openai"
    assert spans[1]["attributes"]["gen_ai.request.model"] == "gpt-4o"
    scores = {s["name"]: (s["value"], s["kind"]) for s in body["scores"]}
    assert scores == {"resolved": (1.0, "true"), "csat_proxy": (0.8, "proxy")}


def test_sdk_protobuf_gzip_agent_tree(
    live_server: LiveServer, make_key: Any, engine: Engine
) -> None:
    key = make_key(role="ingest")
    spans = record(lambda t: agent_tree(t, root_fails=True))
    assert export(live_server, key, spans, compression=Compression.Gzip) == SpanExportResult.SUCCESS
    assert_agent_tree(
        read_trace(live_server, make_key(role="read"), trace_id_of(spans)), root_fails=True
    )
    # The exporter's retry of the same batch writes nothing new.
    before = counts(engine)
    assert export(live_server, key, spans) == SpanExportResult.SUCCESS
    # Event ids only for the two scores: spans are kept unique by their own key.
    assert counts(engine) == before == (1, 5, 2, 2)


@pytest.mark.parametrize("ids", ["hex", "base64"])
def test_otlp_json_from_the_sdk_encoder(
    live_server: LiveServer, make_key: Any, engine: Engine, ids: str
) -> None:
    key = make_key(role="ingest")
    spans = record(agent_tree)
    # json_format writes proto3 JSON: base64 ids and enum names; OTLP JSON proper wants hex.
    doc = json_format.MessageToDict(encode_spans(spans))
    if ids == "hex":
        doc = _ids_to_hex(doc)
    response = httpx.post(
        f"{live_server.url}/v1/traces",
        content=gzip.compress(orjson.dumps(doc)),
        headers={**auth(key), "Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {}
    assert_agent_tree(read_trace(live_server, make_key(role="read"), trace_id_of(spans)))


def _ids_to_hex(node: Any) -> Any:
    import base64

    if isinstance(node, list):
        return [_ids_to_hex(x) for x in node]
    if isinstance(node, dict):
        return {
            k: base64.b64decode(v).hex()
            if k in ("traceId", "spanId", "parentSpanId")
            else _ids_to_hex(v)
            for k, v in node.items()
        }
    return node


def test_spans_of_one_trace_in_any_order_form_one_trace(
    live_server: LiveServer, make_key: Any, engine: Engine
) -> None:
    key = make_key(role="ingest")
    spans = record(agent_tree)
    root = [s for s in spans if s.parent is None]
    children = sorted((s for s in spans if s.parent is not None), key=lambda s: s.start_time or 0)
    # A child-only request comes first, from a service with another name: it must neither
    # narrow the times nor keep its agent once the root arrives, nor take it back after.
    other = Resource.create({"service.name": "gateway", "service.version": "9"})
    children = [_with_resource(s, other) for s in children]
    for part in ([children[3]], children[1:3], root, [children[0]]):
        assert export(live_server, key, part) == SpanExportResult.SUCCESS
    body = read_trace(live_server, make_key(role="read"), trace_id_of(spans))
    assert_agent_tree(body)
    assert counts(engine)[:2] == (1, 5)


def _with_resource(span: ReadableSpan, resource: Resource) -> ReadableSpan:
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=resource,
        attributes=span.attributes,
        events=span.events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def test_openinference_spans(live_server: LiveServer, make_key: Any) -> None:
    def build(tracer: Any) -> None:
        root = tracer.start_span(
            "triage-agent", start_time=T0, attributes={"openinference.span.kind": "AGENT"}
        )
        ctx = set_span_in_context(root)
        kinds = [
            ("LLM", {"llm.model_name": "claude-x", "llm.provider": "anthropic"}),
            ("RETRIEVER", {}),
            ("TOOL", {"tool.name": "calculator"}),
            ("CHAIN", {}),
            ("EVALUATOR", {"telltale.confidence": 0.25, "telltale.step_index": 0}),
        ]
        for i, (kind, extra) in enumerate(kinds):
            span = tracer.start_span(
                kind.lower(),
                context=ctx,
                start_time=T0 + (i + 1) * SEC,
                attributes={"openinference.span.kind": kind, **extra},
            )
            span.end(end_time=T0 + (i + 2) * SEC)
        root.end(end_time=T0 + 9 * SEC)

    spans = record(build, service="phoenix-app")
    assert export(live_server, make_key(role="ingest"), spans) == SpanExportResult.SUCCESS
    body = read_trace(live_server, make_key(role="read"), trace_id_of(spans))
    # The AGENT span's name is the agent, before the service's name.
    assert (body["agent"], body["agent_version"]) == ("triage-agent", "1.4.0")
    got = [(s["kind"], s["tool_name"], s["step_index"], s["confidence"]) for s in body["spans"]]
    assert got == [
        ("evaluator", None, 0, 0.25),
        ("agent", None, None, None),
        ("llm", None, None, None),
        ("retrieval", None, None, None),
        ("tool", "calculator", None, None),
        ("chain", None, None, None),
    ]
    llm = body["spans"][2]["attributes"]
    assert (llm["gen_ai.response.model"], llm["gen_ai.provider.name"]) == ("claude-x", "anthropic")


def test_wrong_key_is_refused(live_server: LiveServer, make_key: Any) -> None:
    spans = record(agent_tree)
    assert export(live_server, "tt_not-a-key", spans) == SpanExportResult.FAILURE
    read_only = make_key(role="read")
    assert export(live_server, read_only, spans) == SpanExportResult.FAILURE
