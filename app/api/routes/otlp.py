"""OTLP/HTTP trace receiver: ``POST /v1/traces`` (protobuf or JSON, gzip allowed)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from starlette.responses import Response

from app.api.body import read_body
from app.api.deps import IngestKey, SettingsDep
from app.ingest.admission import Overloaded
from app.ingest.limits import IngestLimits
from app.otlp.responses import export_response, status_response, wire_format
from app.otlp.service import export_traces

router = APIRouter(tags=["otlp"])

_PROTOBUF = {"schema": {"type": "string", "format": "binary"}}
_EXPORT_REQUEST = {
    "type": "object",
    "description": "ExportTraceServiceRequest in OTLP/JSON (resourceSpans, scopeSpans, spans)",
    "properties": {"resourceSpans": {"type": "array", "items": {"type": "object"}}},
}
_EXPORT_RESPONSE = {
    "type": "object",
    "description": "ExportTraceServiceResponse; partialSuccess when spans were refused",
    "properties": {
        "partialSuccess": {
            "type": "object",
            "properties": {
                "rejectedSpans": {"type": "string", "description": "int64, as OTLP/JSON writes it"},
                "errorMessage": {"type": "string"},
            },
        }
    },
}


@router.post(
    "/v1/traces",
    response_class=Response,
    responses={
        200: {
            "content": {
                "application/x-protobuf": _PROTOBUF,
                "application/json": {"schema": _EXPORT_RESPONSE},
            }
        }
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/x-protobuf": _PROTOBUF,
                "application/json": {"schema": _EXPORT_REQUEST},
            },
        }
    },
)
async def otlp_traces(request: Request, principal: IngestKey, settings: SettingsDep) -> Response:
    """An ``ExportTraceServiceRequest``; answers per the OTLP/HTTP spec in the request's
    encoding: 200 (with ``partial_success`` when spans were refused), 400, 413, 415, 429."""
    wire = wire_format(request.headers.get("content-type"))
    if wire is None:
        return status_response(
            wire=None,
            status=415,
            message="Content-Type must be application/x-protobuf or application/json",
        )
    try:
        body = await read_body(request, limit=settings.max_request_bytes)
        result = await export_traces(
            app_state=request.app.state,
            project_id=principal.project_id,
            body=body,
            wire=wire,
            max_spans=settings.max_events_per_batch,
            limits=IngestLimits.from_settings(settings),
        )
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
    return export_response(
        wire=wire, rejected_spans=result.rejected_spans, error_message=result.error_message
    )
