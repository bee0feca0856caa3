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
from app.otlp.logs_export import export_logs
from app.otlp.metrics_export import export_metrics
from app.otlp.openapi import otlp_operation

router = APIRouter(tags=["otlp"])


@router.post(
    "/v1/logs",
    response_class=Response,
    **otlp_operation(signal="Logs", items="resourceLogs", rejected="rejectedLogRecords"),
)
async def otlp_logs(request: Request, principal: IngestKey, settings: SettingsDep) -> Response:
    """An ``ExportLogsServiceRequest``: GenAI events of spans are stored, other records
    counted; 200 (``partial_success`` when records were refused), 400, 413, 415, 429."""
    return await otlp_answer(request, principal, settings, export_logs)


@router.post(
    "/v1/metrics",
    response_class=Response,
    **otlp_operation(signal="Metrics", items="resourceMetrics", rejected="rejectedDataPoints"),
)
async def otlp_metrics(request: Request, principal: IngestKey, settings: SettingsDep) -> Response:
    """An ``ExportMetricsServiceRequest``: data points are counted, not stored; 200, 400,
    413, 415."""
    return await otlp_answer(request, principal, settings, export_metrics)
