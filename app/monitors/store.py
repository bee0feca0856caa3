"""Monitor CRUD and the row -> JSON shapes the routes return."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db import as_utc
from app.models import DetectorRun, Finding, Monitor
from app.models.base import utcnow
from app.monitors.detection import DetectorConfigError, build_detector
from app.monitors.schemas import MonitorCreate, MonitorPatch


def _selection_json(data: dict[str, Any]) -> dict[str, Any]:
    return {k: (as_utc(v).isoformat() if isinstance(v, datetime) else v) for k, v in data.items()}


def create_monitor(session: Session, *, project_id: int, body: MonitorCreate) -> Monitor:
    """Validate the detector parameters by building it; raise DetectorConfigError."""
    build_detector(body.failure_mode, body.detector_params)
    if session.scalar(
        select(Monitor.id).where(Monitor.project_id == project_id, Monitor.name == body.name)
    ):
        raise DetectorConfigError(f"name: a monitor named {body.name!r} already exists")
    now = utcnow()
    monitor = Monitor(
        project_id=project_id,
        name=body.name,
        failure_mode=body.failure_mode,
        detector_params=body.detector_params,
        selection=_selection_json(body.selection.model_dump()),
        interval_seconds=body.interval_seconds,
        severity=body.severity,
        labels=body.labels,
        enabled=body.enabled,
        auto_resolve_after=body.auto_resolve_after,
        repeat_interval_seconds=body.repeat_interval_seconds,
        time_limit_seconds=body.time_limit_seconds,
        next_run_at=now,
        created_at=now,
        updated_at=now,
    )
    session.add(monitor)
    session.flush()
    return monitor


def update_monitor(session: Session, *, monitor: Monitor, patch: MonitorPatch) -> Monitor:
    changes = patch.model_dump(exclude_unset=True)
    if "detector_params" in changes and changes["detector_params"] is None:
        raise DetectorConfigError("detector_params: must be an object")
    params = changes.get("detector_params", monitor.detector_params)
    build_detector(monitor.failure_mode, params)
    if changes.get("name") and changes["name"] != monitor.name:
        taken = session.scalar(
            select(Monitor.id).where(
                Monitor.project_id == monitor.project_id, Monitor.name == changes["name"]
            )
        )
        if taken:
            raise DetectorConfigError(f"name: a monitor named {changes['name']!r} already exists")
    for key, value in changes.items():
        if value is None:
            continue
        if key == "selection":
            value = _selection_json(patch.selection.model_dump())  # type: ignore[union-attr]
        setattr(monitor, key, value)
    if "interval_seconds" in changes or changes.get("enabled"):
        monitor.next_run_at = utcnow()
    monitor.updated_at = utcnow()
    session.flush()
    return monitor


def monitor_dict(m: Monitor) -> dict[str, Any]:
    return {
        "id": m.id,
        "name": m.name,
        "failure_mode": m.failure_mode,
        "detector_params": m.detector_params,
        "selection": m.selection,
        "interval_seconds": m.interval_seconds,
        "severity": m.severity,
        "labels": m.labels,
        "enabled": m.enabled,
        "auto_resolve_after": m.auto_resolve_after,
        "repeat_interval_seconds": m.repeat_interval_seconds,
        "time_limit_seconds": m.time_limit_seconds,
        "next_run_at": m.next_run_at,
        "last_run_at": m.last_run_at,
        "created_at": m.created_at,
        "updated_at": m.updated_at,
    }


def run_dict(r: DetectorRun) -> dict[str, Any]:
    return {
        "id": r.id,
        "monitor_id": r.monitor_id,
        "failure_mode": r.failure_mode,
        "at": r.at,
        "scheduled_for": r.scheduled_for,
        "window_start": r.window_start,
        "window_end": r.window_end,
        "reference_start": r.reference_start,
        "reference_end": r.reference_end,
        "status": r.status,
        "statistic": r.statistic,
        "threshold": r.threshold,
        "p_value": r.p_value,
        "fired": r.fired,
        "evidence": r.evidence,
        "n_current": r.n_current,
        "n_reference": r.n_reference,
        "duration_ms": r.duration_ms,
        "error": r.error,
    }


def finding_dict(f: Finding) -> dict[str, Any]:
    return {
        "id": f.id,
        "monitor_id": f.monitor_id,
        "run_id": f.run_id,
        "alert_id": f.alert_id,
        "failure_mode": f.failure_mode,
        "severity": f.severity,
        "at": f.at,
        "statistic": f.statistic,
        "threshold": f.threshold,
        "p_value": f.p_value,
        "evidence": f.evidence,
    }
