"""Read models for the pages: small, indexed queries scoped to one project."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import Alert, DetectorRun, IngestMinute, Monitor
from app.models.base import utcnow

FAILURE_MODES = {
    "FM-1": "Compounding decision errors",
    "FM-2": "Tool failure cascades",
    "FM-3": "Non-deterministic output drift",
    "FM-4": "Ground-truth absence",
    "FM-5": "Eval-harness overfitting",
    "FM-6": "Silent degradation (embedding drift)",
    "FM-7": "Proxy goal convergence",
}


def latest_run(session: Session, monitor_id: int) -> DetectorRun | None:
    return session.scalar(
        select(DetectorRun)
        .where(DetectorRun.monitor_id == monitor_id)
        .order_by(DetectorRun.at.desc(), DetectorRun.id.desc())
        .limit(1)
    )


def overview(session: Session, project_id: int) -> dict[str, Any]:
    monitors = session.scalars(
        select(Monitor).where(Monitor.project_id == project_id).order_by(Monitor.id)
    ).all()
    open_alerts = dict(
        session.execute(
            select(Alert.failure_mode, func.count())
            .where(Alert.project_id == project_id, Alert.state.in_(("firing", "acknowledged")))
            .group_by(Alert.failure_mode)
        ).all()
    )
    modes = []
    for fm, title in FAILURE_MODES.items():
        rows = []
        for m in (m for m in monitors if m.failure_mode == fm):
            rows.append({"monitor": m, "run": latest_run(session, m.id)})
        modes.append(
            {"id": fm, "title": title, "monitors": rows, "open_alerts": open_alerts.get(fm, 0)}
        )
    since = utcnow() - timedelta(hours=1)
    rate = dict(
        session.execute(
            select(IngestMinute.type, func.sum(IngestMinute.events))
            .where(IngestMinute.project_id == project_id, IngestMinute.minute >= since)
            .group_by(IngestMinute.type)
        ).all()
    )
    return {"modes": modes, "ingest_last_hour": rate}


def monitor_runs(session: Session, monitor_id: int, limit: int = 500) -> list[DetectorRun]:
    rows = session.scalars(
        select(DetectorRun)
        .where(DetectorRun.monitor_id == monitor_id)
        .order_by(DetectorRun.at.desc(), DetectorRun.id.desc())
        .limit(limit)
    ).all()
    return list(reversed(rows))


def alerts(
    session: Session, project_id: int, *, state: str | None, severity: str | None, limit: int = 200
) -> list[Alert]:
    q = select(Alert).where(Alert.project_id == project_id)
    if state:
        q = q.where(Alert.state == state)
    if severity:
        q = q.where(Alert.severity == severity)
    return list(
        session.scalars(q.order_by(Alert.last_fired_at.desc(), Alert.id.desc()).limit(limit))
    )
