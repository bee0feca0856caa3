"""OTLP/HTTP trace receiver: ``POST /v1/traces`` (protobuf or JSON, gzip allowed)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter, HTTPException, Request
from starlette.responses import Response

from app.admission import Overloaded
from app.api.body import read_body
from app.api.deps import IngestKey, SettingsDep
from app.ingest.limits import IngestLimits
from app.keys import Principal
from app.otlp.openapi import otlp_operation
from app.otlp.responses import status_response, wire_format
from app.otlp.service import ExportCall, export_traces
from app.settings import Settings

router = APIRouter(tags=["otlp"])


@router.post(
    "/v1/traces",
    response_class=Response,
    **otlp_operation(signal="Trace", items="resourceSpans", rejected="rejectedSpans"),
)
async def otlp_traces(request: Request, principal: IngestKey, settings: SettingsDep) -> Response:
    """An ``ExportTraceServiceRequest``; answers per the OTLP/HTTP spec in the request's
    encoding: 200 (with ``partial_success`` when spans were refused), 400, 413, 415, 429."""
    return await otlp_answer(request, principal, settings, export_traces)


async def otlp_answer(
    request: Request,
    principal: Principal,
    settings: Settings,
    export: Callable[[ExportCall], Awaitable[Response]],
) -> Response:
    """Run a signal's ``export`` on the request's body, within the caller's limits; every
    failure answered as OTLP/HTTP says (``google.rpc.Status`` in the request's encoding):
    400, 413, 415, 429."""
    wire = wire_format(request.headers.get("content-type"))
    if wire is None:
        return status_response(
            wire=None,
            status=415,
            message="Content-Type must be application/x-protobuf or application/json",
        )
    try:
        body = await read_body(request, limit=settings.max_request_bytes)
        limits = IngestLimits.from_settings(settings)
        call = ExportCall(
            request.app.state,
            principal.project_id,
            body,
            wire,
            settings.max_events_per_batch,
            limits,
        )
        return await export(call)
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
