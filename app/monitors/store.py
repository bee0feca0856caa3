"""Monitor CRUD and the queries of monitors, their runs and findings, per project."""

from __future__ import annotations

from datetime import datetime
from operator import eq, ge, lt
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from app.db import as_utc, project_row
from app.models import DetectorRun, Finding, Monitor
from app.models.base import utcnow
from app.monitors.detection import DetectorConfigError, build_detector
from app.monitors.schemas import MonitorCreate, MonitorPatch
from app.pagination import Page, paginate, where_given


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
    # Every field of the request is the column of its name (as update_monitor sets them);
    # only the selection is stored as JSON.
    monitor = Monitor(
        **body.model_dump(exclude={"selection"}),
        project_id=project_id,
        selection=_selection_json(body.selection.model_dump()),
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


def list_monitors(session: Session, *, project_id: int) -> list[Monitor]:
    return list(
        session.scalars(
            select(Monitor).where(Monitor.project_id == project_id).order_by(Monitor.id)
        )
    )


def get_monitor(session: Session, *, project_id: int, monitor_id: int) -> Monitor | None:
    """The monitor, or None when it does not exist in this project."""
    return project_row(session, Monitor, monitor_id, project_id=project_id)


def monitor_names(session: Session, *, project_id: int) -> dict[int, str]:
    rows = session.execute(select(Monitor.id, Monitor.name).where(Monitor.project_id == project_id))
    return {mid: name for mid, name in rows}


def _newest_runs(monitor_id: int) -> Select[DetectorRun]:
    return (
        select(DetectorRun)
        .where(DetectorRun.monitor_id == monitor_id)
        .order_by(DetectorRun.at.desc(), DetectorRun.id.desc())
    )


def latest_run(session: Session, *, monitor_id: int) -> DetectorRun | None:
    return session.scalar(_newest_runs(monitor_id).limit(1))


def list_runs(
    session: Session,
    *,
    monitor_id: int,
    since: datetime | None = None,
    until: datetime | None = None,
    status: str | None = None,
    limit: int = 500,
) -> list[DetectorRun]:
    """The latest ``limit`` runs with ``since <= at < until``, oldest first (a chart's series)."""
    q = where_given(
        _newest_runs(monitor_id),
        (DetectorRun.at, ge, since),
        (DetectorRun.at, lt, until),
        (DetectorRun.status, eq, status),
    )
    return list(reversed(session.scalars(q.limit(limit)).all()))


def list_findings(
    session: Session,
    *,
    project_id: int,
    failure_mode: str | None = None,
    monitor_id: int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 100,
    cursor: int | None = None,
) -> Page[Finding]:
    """Findings (runs that fired), newest first."""
    q = where_given(
        select(Finding).where(Finding.project_id == project_id),
        (Finding.failure_mode, eq, failure_mode),
        (Finding.monitor_id, eq, monitor_id),
        (Finding.at, ge, since),
        (Finding.at, lt, until),
    )
    return paginate(session, q, id_column=Finding.id, limit=limit, cursor=cursor)
