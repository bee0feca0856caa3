"""Export one OTLP metrics request (``POST /v1/metrics``): data points are counted by
type, not stored. Telltale computes its own statistics from traces, but an SDK that exports
metrics must get a success, not a 404 it logs on every batch.
"""

from __future__ import annotations

from fastapi import HTTPException
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from app.metrics import INGEST_BYTES, OTLP_METRIC_POINTS
from app.otlp.decode import MalformedBody
from app.otlp.envelope import parse_request
from app.otlp.responses import metrics_response
from app.otlp.service import ExportCall

_POINT_TYPES = ("gauge", "sum", "histogram", "exponential_histogram", "summary")


def count_metric_points(body: bytes, *, wire: str) -> dict[str, int]:
    """Data points by metric type; raise 400 for a body that is not a metrics request."""
    request = _parse(body, wire=wire)
    points = dict.fromkeys(_POINT_TYPES, 0)
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                which = metric.WhichOneof("data")
                if which in points:
                    points[which] += len(getattr(metric, which).data_points)
    return points


async def export_metrics(call: ExportCall) -> Response:
    """Count the request's data points; 200 with an empty ``ExportMetricsServiceResponse``."""
    INGEST_BYTES.labels(route="/v1/metrics").inc(len(call.body))
    points = await run_in_threadpool(count_metric_points, call.body, wire=call.wire)
    for kind, n in points.items():
        if n:
            OTLP_METRIC_POINTS.labels(type=kind).inc(n)
    return metrics_response(wire=call.wire)


def _parse(body: bytes, *, wire: str) -> ExportMetricsServiceRequest:
    try:
        return parse_request(body, wire=wire, message=ExportMetricsServiceRequest)
    except MalformedBody as exc:
        raise HTTPException(400, str(exc)) from None
