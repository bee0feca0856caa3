"""OTLP/HTTP log and metric receivers (``POST /v1/logs``, ``POST /v1/metrics``), and the
GenAI events of a trace's spans read back (``GET /api/v1/traces/{trace_id}/span-events``).

The receivers take protobuf or JSON, gzip allowed, with the auth and size limits of
``/v1/traces``, and answer per the OTLP/HTTP spec in the request's encoding.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from starlette.responses import Response

from app.api.body import read_body
from app.api.deps import IngestKey, ReadKey, SessionDep, SettingsDep
from app.ingest.admission import Overloaded
from app.ingest.limits import IngestLimits
from app.otlp.responses import logs_response, metrics_response, status_response, wire_format
from app.otlp.signals import export_logs, export_metrics
from app.otlp.span_events import span_events_of_trace

router = APIRouter(tags=["otlp"])
_ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {"content": {"application/x-protobuf": {}, "application/json": {}}}
}


async def _answer(
    request: Request, limit: int, export: Callable[[bytes, str], Awaitable[Response]]
) -> Response:
    wire = wire_format(request.headers.get("content-type"))
    if wire is None:
        return status_response(
            wire=None,
            status=415,
            message="Content-Type must be application/x-protobuf or application/json",
        )
    try:
        return await export(await read_body(request, limit=limit), wire)
    except HTTPException as exc:
        return status_response(
            wire=wire, status=exc.status_code, message=str(exc.detail), headers=exc.headers
        )
    except Overloaded as exc:
        return status_response(
            wire=wire,
            status=429,
            message="ingest write path is saturated; retry later",
            headers={"Retry-After": str(exc.retry_after)},
        )


@router.post("/v1/logs", response_class=Response, responses=_ANSWERS)
async def otlp_logs(request: Request, principal: IngestKey, settings: SettingsDep) -> Response:
    """An ``ExportLogsServiceRequest``: GenAI events of spans are stored, other records
    counted; 200 (``partial_success`` when records were refused), 400, 413, 415, 429."""

    async def export(body: bytes, wire: str) -> Response:
        result = await export_logs(
            app_state=request.app.state,
            project_id=principal.project_id,
            body=body,
            wire=wire,
            max_records=settings.max_events_per_batch,
            limits=IngestLimits.from_settings(settings),
        )
        return logs_response(
            wire=wire, rejected=result.rejected, error_message=result.error_message
        )

    return await _answer(request, settings.max_request_bytes, export)


@router.post("/v1/metrics", response_class=Response, responses=_ANSWERS)
async def otlp_metrics(request: Request, principal: IngestKey, settings: SettingsDep) -> Response:
    """An ``ExportMetricsServiceRequest``: data points are counted, not stored; 200, 400,
    413, 415."""

    async def export(body: bytes, wire: str) -> Response:
        await export_metrics(body=body, wire=wire)
        return metrics_response(wire=wire)

    return await _answer(request, settings.max_request_bytes, export)


@router.get("/api/v1/traces/{trace_id}/span-events", tags=["traces"])
def trace_span_events(
    trace_id: str, principal: ReadKey, session: SessionDep
) -> dict[str, list[dict[str, Any]]]:
    """The GenAI events (OTLP logs) of the trace's spans: ``{span_id: [event, ...]}``."""
    return span_events_of_trace(session, project_id=principal.project_id, trace_id=trace_id)
