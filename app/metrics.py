"""Prometheus metrics of the process. Defined once at import; ``/metrics`` exposes them."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

INGEST_EVENTS = Counter(
    "telltale_ingest_events_total", "Ingested events by type and result", ["type", "result"]
)
INGEST_BYTES = Counter(
    "telltale_ingest_bytes_total", "Request body bytes received on ingest routes", ["route"]
)
REQUEST_LATENCY = Histogram(
    "telltale_http_request_duration_seconds",
    "HTTP request latency by route template and status class",
    ["route", "method", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
WRITE_QUEUE_DEPTH = Gauge(
    "telltale_write_queue_depth", "Ingest batches admitted and not yet committed"
)


def record_ingest(event_type: str, result: str, n: int = 1) -> None:
    INGEST_EVENTS.labels(type=event_type, result=result).inc(n)
