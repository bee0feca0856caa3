"""Export one OTLP logs or metrics request.

Logs: GenAI events of spans are written through the ingest store (idempotent, under the
shared admission control, like spans); other records are counted. Metrics are counted by
data point and not stored: Telltale computes its own statistics from traces, but an SDK
that exports metrics must get a success, not a 404 it logs on every batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from starlette.concurrency import run_in_threadpool

from app.ingest.admission import WriteAdmission
from app.ingest.limits import IngestLimits
from app.ingest.store import WriteResult, write_events
from app.metrics import INGEST_BYTES, OTLP_LOG_RECORDS, OTLP_METRIC_POINTS, record_ingest
from app.otlp.decode import MalformedBody
from app.otlp.envelope import parse_envelope
from app.otlp.logs import MappedLogs, map_logs

_POINT_TYPES = ("gauge", "sum", "histogram", "exponential_histogram", "summary")


@dataclass(frozen=True)
class LogsResult:
    stored: int
    duplicates: int
    rejected: int
    error_message: str


def decode_logs(
    body: bytes, *, wire: str, max_records: int, limits: IngestLimits = IngestLimits()
) -> MappedLogs:
    """Raise 400 for a body that is not an ExportLogsServiceRequest, 413 for too many."""
    request = _parse(body, wire, ExportLogsServiceRequest)
    n = sum(len(sl.log_records) for rl in request.resource_logs for sl in rl.scope_logs)
    if n > max_records:
        raise HTTPException(413, f"{n} log records exceed the limit of {max_records} per request")
    return map_logs(request, limits=limits)


async def export_logs(
    *, app_state: Any, project_id: int, body: bytes, wire: str, max_records: int,
    limits: IngestLimits,
) -> LogsResult:  # fmt: skip
    INGEST_BYTES.labels(route="/v1/logs").inc(len(body))
    mapped = await run_in_threadpool(
        decode_logs, body, wire=wire, max_records=max_records, limits=limits
    )
    result = WriteResult()
    if mapped.events:
        events = sorted(mapped.events, key=lambda ev: ev.event_id)
        admission: WriteAdmission = app_state.admission
        async with admission.slot():
            result = await run_in_threadpool(
                write_events, app_state.engine, project_id=project_id, events=events
            )
    for kind in ("genai", "unlinked", "other", "rejected"):
        if getattr(mapped, kind):
            OTLP_LOG_RECORDS.labels(kind=kind).inc(getattr(mapped, kind))
    stored = result.accepted_by_type.get("span_event", 0)
    if stored:
        record_ingest("span_event", "ok", stored)
    message = "; ".join(mapped.messages)
    if mapped.rejected:
        message = f"{mapped.rejected} log record(s) rejected: {message}"
    return LogsResult(stored, result.duplicates, mapped.rejected, message)


def count_metric_points(body: bytes, *, wire: str) -> dict[str, int]:
    """Data points by metric type; raise 400 for a body that is not a metrics request."""
    request = _parse(body, wire, ExportMetricsServiceRequest)
    points = dict.fromkeys(_POINT_TYPES, 0)
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                which = metric.WhichOneof("data")
                if which in points:
                    points[which] += len(getattr(metric, which).data_points)
    return points


async def export_metrics(*, body: bytes, wire: str) -> None:
    INGEST_BYTES.labels(route="/v1/metrics").inc(len(body))
    points = await run_in_threadpool(count_metric_points, body, wire=wire)
    for kind, n in points.items():
        if n:
            OTLP_METRIC_POINTS.labels(type=kind).inc(n)


def _parse(body: bytes, wire: str, message: Any) -> Any:
    if not body and wire == "protobuf":
        # Zero bytes are the valid protobuf encoding of an empty Export*ServiceRequest
        # (the OpenTelemetry Collector answers 200); for JSON they are no document at all.
        return message()
    if not body:
        name = message.DESCRIPTOR.name
        raise HTTPException(400, f"request body is empty; expected an {name}")
    try:
        return parse_envelope(body, wire=wire, message=message)
    except MalformedBody as exc:
        raise HTTPException(400, str(exc)) from None
