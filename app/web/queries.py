"""Read models for the pages that no API answer gives: the overview, grouped by failure mode."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import Alert, IngestMinute
from app.models.base import utcnow
from app.monitors import readiness
from app.monitors import store as monitors

FAILURE_MODES = {
    "FM-1": "Compounding decision errors",
    "FM-2": "Tool failure cascades",
    "FM-3": "Non-deterministic output drift",
    "FM-4": "Ground-truth absence",
    "FM-5": "Eval-harness overfitting",
    "FM-6": "Silent degradation (embedding drift)",
    "FM-7": "Proxy goal convergence",
    "OUTCOME": "Outcomes (task success, errors, latency)",
}


def overview(session: Session, *, project_id: int) -> dict[str, Any]:
    """Per failure mode: its monitors with their latest run and data readiness, and its
    open alerts; plus the events ingested per type in the last hour."""
    found = monitors.list_monitors(session, project_id=project_id)
    open_alerts = dict(
        session.execute(
            select(Alert.failure_mode, func.count())
            .where(Alert.project_id == project_id, Alert.state.in_(("firing", "acknowledged")))
            .group_by(Alert.failure_mode)
        ).all()
    )
    modes = []
    # The defaults share one window: one "now" for every monitor, so it is counted once.
    counts: dict[Any, Any] = {}
    now = utcnow()
    for fm, title in FAILURE_MODES.items():
        rows = [
            {
                "monitor": m,
                "run": monitors.latest_run(session, monitor_id=m.id),
                "readiness": readiness.monitor_readiness(
                    session, monitor=m, now=now, counts_cache=counts
                ),
            }
            for m in found
            if m.failure_mode == fm
        ]
        modes.append(
            {"id": fm, "title": title, "monitors": rows, "open_alerts": open_alerts.get(fm, 0)}
        )
    since = now - timedelta(hours=1)
    rate = dict(
        session.execute(
            select(IngestMinute.type, func.sum(IngestMinute.events))
            .where(IngestMinute.project_id == project_id, IngestMinute.minute >= since)
            .group_by(IngestMinute.type)
        ).all()
    )
    return {"modes": modes, "ingest_last_hour": rate}
