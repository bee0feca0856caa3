"""Monitors: CRUD, the ten defaults, run-now, and the run history for charts."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query, Response
from pydantic import ConfigDict, Field
from sqlalchemy.orm import Session

from app.api.deps import AdminKey, EngineDep, Int4Id, MonitorRunnerDep, ReadKey, SessionDep
from app.api.errors import found, unprocessable
from app.db import write_session
from app.deps import ProjectComputeSlot
from app.models import Monitor
from app.models.base import UTCTime
from app.monitors import defaults, store
from app.monitors.detection import DetectorConfigError
from app.monitors.readiness import report as readiness
from app.monitors.readiness.schemas import ReadinessOut
from app.monitors.schemas import (
    IntervalSeconds,
    MonitorCreate,
    MonitorList,
    MonitorOut,
    MonitorPatch,
    RunList,
    RunOut,
    RunRequest,
)
from app.monitors.slots import DetectorsBusy
from app.request_model import RequestModel

router = APIRouter(prefix="/api/v1/monitors", tags=["monitors"])


class DefaultsRequest(RequestModel):
    model_config = ConfigDict(extra="forbid")

    interval_seconds: IntervalSeconds = 900
    detector_params: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="per failure mode, e.g. {'FM-1': {'alpha': 0.005}}"
    )


def _get(session: Session, project_id: int, monitor_id: int) -> Monitor:
    monitor = store.get_monitor(session, project_id=project_id, monitor_id=monitor_id)
    return found(monitor, "monitor", monitor_id)


@router.get("")
def list_monitors(principal: ReadKey, session: SessionDep) -> MonitorList:
    rows = store.list_monitors(session, project_id=principal.project_id)
    return MonitorList(monitors=[MonitorOut.model_validate(m) for m in rows])


@router.post("", status_code=201)
def create(body: MonitorCreate, principal: AdminKey, engine: EngineDep) -> MonitorOut:
    with unprocessable(DetectorConfigError), write_session(engine) as session:
        monitor = store.create_monitor(session, project_id=principal.project_id, body=body)
    return MonitorOut.model_validate(monitor)


@router.post("/defaults", status_code=201)
def create_defaults(
    principal: AdminKey, engine: EngineDep, body: DefaultsRequest | None = None
) -> MonitorList:
    """Create a monitor per failure mode and OUTCOME (skipping names that exist); return all."""
    body = body or DefaultsRequest.model_validate({})
    unknown = sorted(set(body.detector_params) - {m["failure_mode"] for m in defaults.DEFAULTS})
    if unknown:
        raise HTTPException(422, f"detector_params.{unknown[0]}: not a failure mode")
    with unprocessable(DetectorConfigError), write_session(engine) as session:
        monitors = defaults.create_defaults(
            session,
            project_id=principal.project_id,
            interval_seconds=body.interval_seconds,
            detector_params=body.detector_params,
        )
    return MonitorList(monitors=[MonitorOut.model_validate(m) for m in monitors])


@router.get("/{monitor_id}")
def get_monitor(monitor_id: Int4Id, principal: ReadKey, session: SessionDep) -> MonitorOut:
    return MonitorOut.model_validate(_get(session, principal.project_id, monitor_id))


@router.patch("/{monitor_id}")
def patch_monitor(
    monitor_id: Int4Id, body: MonitorPatch, principal: AdminKey, engine: EngineDep
) -> MonitorOut:
    with unprocessable(DetectorConfigError), write_session(engine) as session:
        monitor = store.update_monitor(
            session, monitor=_get(session, principal.project_id, monitor_id), patch=body
        )
    return MonitorOut.model_validate(monitor)


@router.delete("/{monitor_id}", status_code=204)
def delete_monitor(monitor_id: Int4Id, principal: AdminKey, engine: EngineDep) -> Response:
    with write_session(engine) as session:
        session.delete(_get(session, principal.project_id, monitor_id))
    return Response(status_code=204)


@router.post("/{monitor_id}/run", dependencies=[ProjectComputeSlot])
def run_now(
    monitor_id: Int4Id,
    principal: AdminKey,
    session: SessionDep,
    runner: MonitorRunnerDep,
    body: RunRequest | None = None,
) -> RunOut:
    """Run the monitor now (or as of ``now``) and return the persisted run: in the same
    cycle as the run-now calls just before it (app.monitors.runner.MonitorRunner)."""
    _get(session, principal.project_id, monitor_id)
    try:
        run = runner.run_now(monitor_id, now=body.now if body else None)
    except DetectorsBusy as exc:
        raise HTTPException(429, str(exc), headers={"Retry-After": "5"}) from None
    return RunOut.model_validate(found(run, "monitor", monitor_id))


@router.get("/{monitor_id}/readiness")
def get_readiness(
    monitor_id: Int4Id,
    principal: ReadKey,
    session: SessionDep,
    now: UTCTime | None = Query(None, description="as of (ISO-8601); default: now"),
) -> ReadinessOut:
    """Each need of the monitor's detector in the window a run now would read: present or
    missing, with counts, and for each missing one how to send it."""
    monitor = _get(session, principal.project_id, monitor_id)
    return ReadinessOut.model_validate(
        readiness.monitor_readiness(session, monitor=monitor, now=now)
    )


@router.get("/{monitor_id}/runs")
def list_runs(
    monitor_id: Int4Id,
    principal: ReadKey,
    session: SessionDep,
    since: UTCTime | None = Query(None, description="at >= since (ISO-8601)"),
    until: UTCTime | None = Query(None, description="at < until (ISO-8601)"),
    status: str | None = Query(None, pattern="^(ok|insufficient_data|failed)$"),
    limit: int = Query(500, ge=1, le=5000),
) -> RunList:
    """The latest ``limit`` runs in the range, oldest first (a time series for charts)."""
    _get(session, principal.project_id, monitor_id)
    rows = store.list_runs(
        session, monitor_id=monitor_id, since=since, until=until, status=status, limit=limit
    )
    return RunList(runs=[RunOut.model_validate(r) for r in rows])
