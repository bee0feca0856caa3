"""Prometheus metrics of the process. Defined once at import; ``/metrics`` exposes them."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

INGEST_EVENTS = Counter(
    "telltale_ingest_events_total", "Ingested events by type and result", ["type", "result"]
)
INGEST_BYTES = Counter(
    "telltale_ingest_bytes_total", "Request body bytes received on ingest routes", ["route"]
)
OTLP_LOG_RECORDS = Counter(
    "telltale_otlp_log_records_total",
    "OTLP log records received: GenAI events of a span (stored), GenAI events without a "
    "span, other logs (both counted only), refused",
    ["kind"],
)
OTLP_METRIC_POINTS = Counter(
    "telltale_otlp_metric_data_points_total",
    "OTLP metric data points received (counted, not stored) by metric type",
    ["type"],
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


# -- monitoring engine (app.monitors, app.alerts, app.scheduler) -------------------------
_MONITOR_LABELS = ["project_id", "monitor", "failure_mode"]
MONITOR_LAST_STATISTIC = Gauge(
    "telltale_monitor_last_statistic", "Statistic of the monitor's last ok run", _MONITOR_LABELS
)
MONITOR_LAST_THRESHOLD = Gauge(
    "telltale_monitor_last_threshold", "Threshold of the monitor's last ok run", _MONITOR_LABELS
)
MONITOR_LAST_RUN = Gauge(
    "telltale_monitor_last_run_timestamp_seconds",
    "Wall-clock time the monitor last ran",
    _MONITOR_LABELS,
)
MONITOR_LAST_DURATION = Gauge(
    "telltale_monitor_last_run_duration_seconds",
    "Duration of the monitor's last run",
    _MONITOR_LABELS,
)
MONITOR_RUNS = Counter(
    "telltale_monitor_runs_total",
    "Monitor runs by failure mode and status",
    ["failure_mode", "status"],
)
ALERTS_BY_STATE = Gauge("telltale_alerts", "Alerts by state (all projects)", ["state"])
OUTBOX_BACKLOG = Gauge("telltale_outbox_backlog", "Notifications pending delivery")
NOTIFICATIONS_SENT = Counter(
    "telltale_notifications_sent_total", "Notifications delivered (2xx)", ["channel_type"]
)
NOTIFICATION_FAILURES = Counter(
    "telltale_notification_failures_total",
    "Failed notification attempts by channel type and reason (HTTP code or network)",
    ["channel_type", "reason"],
)
SCHEDULER_JOB_LAST_RUN = Gauge(
    "telltale_scheduler_job_last_run_timestamp_seconds", "When a periodic job last ran", ["job"]
)


def observe_monitor_run(
    *,
    project_id: int,
    monitor: str,
    failure_mode: str,
    status: str,
    statistic: float | None,
    threshold: float | None,
    duration_s: float,
) -> None:
    import time

    labels = {"project_id": str(project_id), "monitor": monitor, "failure_mode": failure_mode}
    MONITOR_RUNS.labels(failure_mode=failure_mode, status=status).inc()
    MONITOR_LAST_RUN.labels(**labels).set(time.time())
    MONITOR_LAST_DURATION.labels(**labels).set(duration_s)
    if status == "ok" and statistic is not None:
        MONITOR_LAST_STATISTIC.labels(**labels).set(statistic)
    if status == "ok" and threshold is not None:
        MONITOR_LAST_THRESHOLD.labels(**labels).set(threshold)


# -- read from the database at scrape time (true across API and scheduler processes) ----
LABEL_QUEUE_DEPTH = Gauge(
    "telltale_label_queue_depth", "Labeling queue items by state", ["project_id", "queue", "state"]
)
# Failure issues by the state read now (app/issues/states.py), per project.
FAILURE_ISSUES = Gauge(
    "telltale_failure_issues", "Failure issues by state", ["project_id", "state"]
)
EMBED_JOB_BACKLOG = Gauge("telltale_embed_jobs", "Media embed jobs by status", ["status"])
EVALUATOR_PAUSED = Gauge(
    "telltale_evaluator_paused",
    "1 while an online evaluator's circuit breaker holds it paused (its endpoint kept failing)",
    ["project_id", "evaluator"],
)
EVALUATOR_CALLS_TODAY = Gauge(
    "telltale_evaluator_calls_today", "Judge calls spent today (UTC) of the daily budget",
    ["project_id", "evaluator"],
)  # fmt: skip
EVALUATOR_TOKENS_TODAY = Gauge(
    "telltale_evaluator_tokens_today", "Judge tokens spent today (UTC)", ["project_id", "evaluator"]
)
EVALUATOR_BACKLOG = Gauge(
    "telltale_evaluator_backlog", "Evaluations waiting or running", ["project_id", "evaluator", "status"]
)
