"""Export one OTLP logs request (``POST /v1/logs``).

GenAI events of spans (:mod:`app.otlp.logs`) are written through the ingest store
(idempotent, under the shared admission control, like spans); other records are counted.
"""

from __future__ import annotations

from fastapi import HTTPException
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from app.ingest.limits import IngestLimits
from app.ingest.service import write_admitted
from app.metrics import INGEST_BYTES, OTLP_LOG_RECORDS, record_ingest
from app.otlp.decode import MalformedBody
from app.otlp.envelope import parse_request
from app.otlp.logs import MappedLogs, map_logs
from app.otlp.responses import logs_response
from app.otlp.service import ExportCall


def decode_logs(
    body: bytes, *, wire: str, max_records: int, limits: IngestLimits = IngestLimits()
) -> MappedLogs:
    """Raise 400 for a body that is not an ExportLogsServiceRequest, 413 for too many."""
    request = _parse(body, wire=wire)
    n = sum(len(sl.log_records) for rl in request.resource_logs for sl in rl.scope_logs)
    if n > max_records:
        raise HTTPException(413, f"{n} log records exceed the limit of {max_records} per request")
    return map_logs(request, limits=limits)


async def export_logs(call: ExportCall) -> Response:
    """Store the request's GenAI events and count the other records; 200, with
    ``partial_success`` naming the records refused (an ``ExportLogsServiceResponse``)."""
    INGEST_BYTES.labels(route="/v1/logs").inc(len(call.body))
    mapped = await run_in_threadpool(
        decode_logs, call.body, wire=call.wire, max_records=call.max_items, limits=call.limits
    )
    result = await write_admitted(
        call.app_state,
        project_id=call.project_id,
        events=sorted(mapped.events, key=lambda ev: ev.event_id),
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
    return logs_response(wire=call.wire, rejected=mapped.rejected, error_message=message)


def _parse(body: bytes, *, wire: str) -> ExportLogsServiceRequest:
    try:
        return parse_request(body, wire=wire, message=ExportLogsServiceRequest)
    except MalformedBody as exc:
        raise HTTPException(400, str(exc)) from None
