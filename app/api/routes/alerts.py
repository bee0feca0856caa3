"""Alerts: list, one with its history, acknowledge and resolve."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, Field
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.alerts import lifecycle, store
from app.alerts.schemas import AlertDetail, AlertEventOut, AlertList, AlertOut
from app.api.deps import AnnotateKey, EngineDep, Int4Id, Int8Id, ReadKey, SessionDep, SettingsDep
from app.api.errors import found
from app.db import write_session
from app.domain import FailureMode, Severity
from app.keys import Principal
from app.models import Alert
from app.models.base import utcnow

router = APIRouter(prefix="/api/v1/alerts", tags=["alerts"])


def actor(principal: Principal) -> str:
    return principal.actor


def _get(session: Session, project_id: int, alert_id: int) -> Alert:
    return found(
        store.get_alert(session, project_id=project_id, alert_id=alert_id), "alert", alert_id
    )


class AlertFilters(BaseModel):
    """The alert list's query parameters, each narrowing the list when given."""

    state: Literal["firing", "acknowledged", "resolved"] | None = None
    severity: Severity | None = None
    failure_mode: FailureMode | None = None
    monitor_id: Int4Id | None = None
    limit: int = Field(100, ge=1, le=1000)


@router.get("")
def list_alerts(
    principal: ReadKey, session: SessionDep, filters: Annotated[AlertFilters, Query()]
) -> AlertList:
    rows = store.list_alerts(session, project_id=principal.project_id, **filters.model_dump())
    return AlertList(alerts=[AlertOut.model_validate(a) for a in rows])


@router.get("/{alert_id}")
def get_alert(alert_id: Int8Id, principal: ReadKey, session: SessionDep) -> AlertDetail:
    """The alert with every transition (``events``: kind, from/to state, actor, time)."""
    alert = _get(session, principal.project_id, alert_id)
    events = [
        AlertEventOut.model_validate(e) for e in store.alert_events(session, alert_id=alert_id)
    ]
    return AlertDetail.model_validate(
        {**AlertOut.model_validate(alert).model_dump(), "events": events}
    )


def _transition(
    alert_id: int, principal: Principal, engine: Engine, public_url: str, action: str
) -> AlertOut:
    try:
        with write_session(engine) as session:
            alert = _get(session, principal.project_id, alert_id)
            fn = lifecycle.acknowledge if action == "ack" else lifecycle.resolve
            fn(session, alert, actor=actor(principal), now=utcnow(), public_url=public_url)
    except lifecycle.TransitionError as exc:
        raise HTTPException(409, str(exc)) from None
    return AlertOut.model_validate(alert)


@router.post("/{alert_id}/ack")
def acknowledge(
    alert_id: Int8Id, principal: AnnotateKey, engine: EngineDep, settings: SettingsDep
) -> AlertOut:
    """firing -> acknowledged: stops re-notification; PagerDuty gets ``acknowledge``."""
    return _transition(alert_id, principal, engine, settings.public_url, "ack")


@router.post("/{alert_id}/resolve")
def resolve(
    alert_id: Int8Id, principal: AnnotateKey, engine: EngineDep, settings: SettingsDep
) -> AlertOut:
    """firing/acknowledged -> resolved; channels that were notified get ``resolve``."""
    return _transition(alert_id, principal, engine, settings.public_url, "resolve")
