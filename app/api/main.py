"""Mounts every router; nothing else."""

from fastapi import APIRouter

from app.api.routes import (
    agents,
    alerts,
    channels,
    derived_fields,
    evaluators,
    findings,
    health,
    ingest,
    issues,
    keys,
    media,
    metrics,
    model_prices,
    monitors,
    otlp,
    otlp_logs,
    retention,
    rules,
    scores,
    sessions,
    silences,
    streams,
    traces,
)
from app.api.routes import queues as label_queues

api_router = APIRouter()
api_router.include_router(health.router)
api_router.include_router(ingest.router)
api_router.include_router(scores.router)
api_router.include_router(traces.router)
api_router.include_router(sessions.router)
api_router.include_router(agents.router)
api_router.include_router(issues.router)
api_router.include_router(streams.router)
api_router.include_router(keys.router)
api_router.include_router(metrics.router)
api_router.include_router(otlp.router)
api_router.include_router(otlp_logs.router)
api_router.include_router(label_queues.router)
api_router.include_router(monitors.router)
api_router.include_router(rules.router)
api_router.include_router(evaluators.router)
api_router.include_router(findings.router)
api_router.include_router(alerts.router)
api_router.include_router(silences.router)
api_router.include_router(channels.router)
api_router.include_router(media.router)
api_router.include_router(retention.router)
api_router.include_router(derived_fields.router)
api_router.include_router(model_prices.router)
