"""OTLP logs and metrics from the real OpenTelemetry SDK exporters, to a live Telltale.

GenAI events are emitted inside their span with the SDK's logger, so they carry its trace
and span id, then exported with the SDK's OTLP/HTTP log exporter before or after the
spans; other logs and metrics must be accepted (success to the exporter), not stored.
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Sequence
from typing import Any

import httpx
import orjson
import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import set_span_in_context
from prometheus_client import REGISTRY
from sqlalchemy import Engine, func, select

from app.models import IngestEvent, Score, SpanEvent
from tests.app.test_otlp_sdk import SEC, T0, export, read_trace, record, trace_id_of
from tests.conftest import LiveServer, auth

RESOURCE = Resource.create({"service.name": "support-bot"})


def chat_with_events() -> tuple[list[ReadableSpan], list[ReadableLogRecord]]:
    """invoke_agent -> chat; the chat span's GenAI events, one plain log, one event outside."""
    memory = InMemoryLogRecordExporter()
    logs = LoggerProvider(resource=RESOURCE)
    logs.add_log_record_processor(SimpleLogRecordProcessor(memory))
    logger = logs.get_logger("agent-test")

    def build(tracer: Any) -> None:
        root = tracer.start_span(
            "invoke_agent support",
            start_time=T0,
            attributes={"gen_ai.operation.name": "invoke_agent"},
        )
        chat = tracer.start_span(
            "chat gpt-4o",
            context=set_span_in_context(root),
            start_time=T0 + SEC,
            attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"},
        )
        ctx = set_span_in_context(chat)
        logger.emit(
            timestamp=T0 + SEC,
            context=ctx,
            event_name="gen_ai.user.message",
            body={"content": "where is my order?"},
        )
        logger.emit(
            timestamp=T0 + 2 * SEC,
            context=ctx,
            event_name="gen_ai.client.inference.operation.details",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.output.messages": '[{"role":"assistant","parts":[]}]',
            },
        )
        logger.emit(
            timestamp=T0 + 3 * SEC,
            context=ctx,
            event_name="gen_ai.evaluation.result",
            attributes={
                "gen_ai.evaluation.name": "relevance",
                "gen_ai.evaluation.score.value": 0.75,
            },
        )
        logger.emit(timestamp=T0 + 3 * SEC, context=ctx, body="plain application log")
        logger.emit(timestamp=T0, event_name="gen_ai.user.message", body={"content": "no span"})
        chat.end(end_time=T0 + 4 * SEC)
        root.end(end_time=T0 + 5 * SEC)

    spans = record(build)
    logs.shutdown()
    return spans, list(memory.get_finished_logs())


def export_logs(
    server: LiveServer, key: str, records: Sequence[ReadableLogRecord], **kw: Any
) -> LogRecordExportResult:
    exporter = OTLPLogExporter(
        endpoint=f"{server.url}/v1/logs", headers={"x-api-key": key}, timeout=10, **kw
    )
    try:
        return exporter.export(records)
    finally:
        exporter.shutdown()


def counter(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize("logs_first", [True, False])
def test_genai_events_join_their_span_in_either_order(
    live_server: LiveServer, make_key: Any, engine: Engine, logs_first: bool
) -> None:
    key = make_key(role="ingest")
    spans, records = chat_with_events()
    other_before = counter("telltale_otlp_log_records_total", kind="other")
    sends = [
        lambda: export_logs(live_server, key, records, compression=Compression.Gzip),
        lambda: export(live_server, key, spans),
    ]
    expected = [LogRecordExportResult.SUCCESS, SpanExportResult.SUCCESS]
    if not logs_first:
        sends, expected = sends[::-1], expected[::-1]
    assert [send() for send in sends] == expected

    reader = make_key(role="read")
    trace_id = trace_id_of(spans)
    chat = next(s for s in read_trace(live_server, reader, trace_id)["spans"] if s["kind"] == "llm")
    r = httpx.get(f"{live_server.url}/api/v1/traces/{trace_id}/span-events", headers=auth(reader))
    assert r.status_code == 200, r.text
    events = r.json()
    assert list(events) == [chat["span_id"]]
    got = events[chat["span_id"]]
    assert [e["name"] for e in got] == [
        "gen_ai.user.message",
        "gen_ai.client.inference.operation.details",
        "gen_ai.evaluation.result",
    ]
    assert got[0]["body"] == {"content": "where is my order?"}
    assert got[1]["attributes"]["gen_ai.output.messages"].startswith('[{"role"')
    with engine.connect() as conn:
        assert conn.execute(select(Score.name, Score.value, Score.kind)).all() == [
            ("relevance", 0.75, "proxy")
        ]
    assert counter("telltale_otlp_log_records_total", kind="other") == other_before + 1

    # The exporter's retry of the same batch stores nothing new.
    def stored() -> tuple[int, int]:
        with engine.connect() as conn:
            return (
                conn.scalar(select(func.count()).select_from(SpanEvent)),
                conn.scalar(select(func.count()).select_from(IngestEvent)),
            )

    before = stored()
    assert export_logs(live_server, key, records) == LogRecordExportResult.SUCCESS
    assert stored() == before and before[0] == 3


def test_logs_as_otlp_json_and_partial_success(
    live_server: LiveServer, make_key: Any, engine: Engine
) -> None:
    key = make_key(role="ingest")
    _, records = chat_with_events()
    doc = json_format.MessageToDict(encode_logs(records))
    # OTLP JSON proper: hex ids. One record gets a span id of the wrong length.
    logs = doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    for rec in logs:
        for field in ("traceId", "spanId"):
            if field in rec:
                rec[field] = base64.b64decode(rec[field]).hex()
    logs[0]["spanId"] = "abcd"
    r = httpx.post(
        f"{live_server.url}/v1/logs",
        content=gzip.compress(orjson.dumps(doc)),
        headers={**auth(key), "Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert r.status_code == 200, r.text
    partial = r.json()["partialSuccess"]
    assert partial["rejectedLogRecords"] == "1"
    assert "span_id must be 8 bytes" in partial["errorMessage"]
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(SpanEvent)) == 2


def test_bad_logs_bodies_get_google_rpc_status(live_server: LiveServer, make_key: Any) -> None:
    key = make_key(role="ingest")
    for path, field in (("/v1/logs", "resourceLogs"), ("/v1/metrics", "resourceMetrics")):
        r = httpx.post(
            f"{live_server.url}{path}",
            content=b"\xff\xff\xff",
            headers={**auth(key), "Content-Type": "application/x-protobuf"},
        )
        assert r.status_code == 400
        status = status_pb2.Status.FromString(r.content)
        assert status.code == 3 and "not a protobuf Export" in status.message
        r = httpx.post(
            f"{live_server.url}{path}",
            content=orjson.dumps({field: 7}),
            headers={**auth(key), "Content-Type": "application/json"},
        )
        assert r.status_code == 400 and r.json()["code"] == 3, r.text
        r = httpx.post(f"{live_server.url}{path}", content=b"{}", headers={**auth(key)})
        assert r.status_code == 415
    r = httpx.post(
        f"{live_server.url}/v1/logs",
        content=b"{}",
        headers={**auth(key), "Content-Type": "application/json"},
    )
    assert r.status_code == 200 and r.json() == {}
    assert ExportLogsServiceResponse.FromString(b"") == ExportLogsServiceResponse()


def test_sdk_metrics_are_accepted_and_counted(live_server: LiveServer, make_key: Any) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(resource=RESOURCE, metric_readers=[reader])
    meter = provider.get_meter("agent-test")
    meter.create_counter("gen_ai.client.token.usage.total").add(12, {"gen_ai.token.type": "input"})
    meter.create_histogram("gen_ai.client.operation.duration").record(0.4)
    data = reader.get_metrics_data()
    provider.shutdown()
    before = counter("telltale_otlp_metric_data_points_total", type="histogram")
    exporter = OTLPMetricExporter(
        endpoint=f"{live_server.url}/v1/metrics",
        headers={"x-api-key": make_key(role="ingest")},
        timeout=10,
        compression=Compression.Gzip,
    )
    try:
        assert exporter.export(data) == MetricExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert counter("telltale_otlp_metric_data_points_total", type="histogram") == before + 1


def test_logs_and_metrics_need_an_ingest_key(live_server: LiveServer, make_key: Any) -> None:
    _, records = chat_with_events()
    assert export_logs(live_server, "tt_not-a-key", records) == LogRecordExportResult.FAILURE
    assert export_logs(live_server, make_key(role="read"), records) == (
        LogRecordExportResult.FAILURE
    )


def tool_loop_with_events() -> tuple[list[ReadableSpan], list[ReadableLogRecord]]:
    """Two chat spans without content; their details events carry the tool calls the first
    asked for and the tool results the second was given (OTel ``event_only`` capture)."""
    memory = InMemoryLogRecordExporter()
    logs = LoggerProvider(resource=RESOURCE)
    logs.add_log_record_processor(SimpleLogRecordProcessor(memory))
    logger = logs.get_logger("agent-test")
    calls = [
        {
            "type": "tool_call",
            "id": "call_1",
            "name": "get_weather",
            "arguments": {"city": "Paris"},
        },
        {"type": "tool_call", "id": "call_2", "name": "lookup_order", "arguments": {"id": "42"}},
    ]
    answers = [
        {"type": "tool_call_response", "id": "call_1", "response": "sunny in Paris"},
        {"type": "tool_call_response", "id": "call_2", "response": "Error: ConnectionError"},
    ]

    def build(tracer: Any) -> None:
        root = tracer.start_span(
            "invoke_agent support",
            start_time=T0,
            attributes={"gen_ai.operation.name": "invoke_agent"},
        )
        for i, (inp, out) in enumerate(((["user"], calls), (answers, ["text"]))):
            chat = tracer.start_span(
                "chat gpt-4o",
                context=set_span_in_context(root),
                start_time=T0 + (2 * i + 1) * SEC,
                attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"},
            )
            logger.emit(
                timestamp=T0 + (2 * i + 2) * SEC,
                context=set_span_in_context(chat),
                event_name="gen_ai.client.inference.operation.details",
                attributes={
                    "gen_ai.input.messages": orjson.dumps(
                        [{"role": "tool" if i else "user", "parts": inp if i else []}]
                    ).decode(),
                    "gen_ai.output.messages": orjson.dumps(
                        [{"role": "assistant", "parts": out if not i else []}]
                    ).decode(),
                },
            )
            chat.end(end_time=T0 + (2 * i + 2) * SEC)
        root.end(end_time=T0 + 5 * SEC)

    spans = record(build)
    logs.shutdown()
    return spans, list(memory.get_finished_logs())


@pytest.mark.parametrize("logs_first", [True, False])
def test_event_only_tool_calls_become_steps_in_either_order(
    live_server: LiveServer, make_key: Any, engine: Engine, logs_first: bool
) -> None:
    """The calls a chat asked for, seen only in its GenAI events, are the trace's tool
    steps, with the outcome from the next chat's tool results, whichever came first."""
    from datetime import UTC, datetime

    from sqlalchemy.orm import Session

    from app.monitors.windows import trace_window as windows

    key = make_key(role="ingest")
    spans, records = tool_loop_with_events()
    sends = [
        lambda: export_logs(live_server, key, records),
        lambda: export(live_server, key, spans),
    ]
    for send in sends if logs_first else sends[::-1]:
        assert send() in (LogRecordExportResult.SUCCESS, SpanExportResult.SUCCESS)
    with Session(engine) as session:
        (trace,) = windows.load_trace_records(
            session,
            windows.TraceSelection(project_id=1),
            start=datetime.fromtimestamp(T0 / 1e9 - 1, UTC),
            end=datetime.fromtimestamp(T0 / 1e9 + 60, UTC),
        )
    assert [(s.kind, s.tool_name, s.status) for s in trace.steps] == [
        ("llm", None, "ok"),
        ("tool", "get_weather", "ok"),
        ("tool", "lookup_order", "error"),
        ("llm", None, "ok"),
    ]
