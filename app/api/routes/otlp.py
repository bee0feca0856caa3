"""OTLP/HTTP trace receiver: ``POST /v1/traces`` (protobuf or JSON, gzip allowed)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter, HTTPException, Request
from starlette.responses import Response

from app.api.body import read_body
from app.api.deps import IngestKey, SettingsDep
from app.ingest.admission import Overloaded
from app.ingest.limits import IngestLimits
from app.otlp.openapi import otlp_operation
from app.otlp.responses import export_response, status_response, wire_format
from app.otlp.service import export_traces

router = APIRouter(tags=["otlp"])


@router.post(
    "/v1/traces",
    response_class=Response,
    **otlp_operation(signal="Trace", items="resourceSpans", rejected="rejectedSpans"),
)
async def otlp_traces(request: Request, principal: IngestKey, settings: SettingsDep) -> Response:
    """An ``ExportTraceServiceRequest``; answers per the OTLP/HTTP spec in the request's
    encoding: 200 (with ``partial_success`` when spans were refused), 400, 413, 415, 429."""

    async def export(body: bytes, wire: str) -> Response:
        result = await export_traces(
            app_state=request.app.state,
            project_id=principal.project_id,
            body=body,
            wire=wire,
            max_spans=settings.max_events_per_batch,
            limits=IngestLimits.from_settings(settings),
        )
        return export_response(
            wire=wire, rejected_spans=result.rejected_spans, error_message=result.error_message
        )

    return await otlp_answer(request, settings.max_request_bytes, export)


async def otlp_answer(
    request: Request, limit: int, export: Callable[[bytes, str], Awaitable[Response]]
) -> Response:
    """Run ``export`` on the request's body; every failure answered as OTLP/HTTP says
    (``google.rpc.Status`` in the request's encoding): 400, 413, 415, 429."""
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
