"""OTLP/HTTP log and metric receivers (``POST /v1/logs``, ``POST /v1/metrics``). The GenAI
events stored from logs are read back with the trace (:mod:`app.api.routes.traces`).

The receivers take protobuf or JSON, gzip allowed, with the auth and size limits of
``/v1/traces``, and answer per the OTLP/HTTP spec in the request's encoding.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from app.api.deps import IngestKey, SettingsDep
from app.api.routes.otlp import otlp_answer
from app.ingest.limits import IngestLimits
from app.otlp.logs_export import export_logs
from app.otlp.metrics_export import export_metrics
from app.otlp.openapi import otlp_operation
from app.otlp.responses import logs_response, metrics_response

router = APIRouter(tags=["otlp"])


@router.post(
    "/v1/logs",
    response_class=Response,
    **otlp_operation(signal="Logs", items="resourceLogs", rejected="rejectedLogRecords"),
)
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

    return await otlp_answer(request, settings.max_request_bytes, export)


@router.post(
    "/v1/metrics",
    response_class=Response,
    **otlp_operation(signal="Metrics", items="resourceMetrics", rejected="rejectedDataPoints"),
)
async def otlp_metrics(request: Request, principal: IngestKey, settings: SettingsDep) -> Response:
    """An ``ExportMetricsServiceRequest``: data points are counted, not stored; 200, 400,
    413, 415."""

    async def export(body: bytes, wire: str) -> Response:
        await export_metrics(body=body, wire=wire)
        return metrics_response(wire=wire)

    return await otlp_answer(request, settings.max_request_bytes, export)
