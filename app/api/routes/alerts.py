"""Alerts: list, one with its history, acknowledge and resolve."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Query
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.alerts import lifecycle
from app.alerts.store import alert_dict, event_dict
from app.api.deps import AnnotateKey, EngineDep, Int4Id, Int8Id, ReadKey, SessionDep, SettingsDep
from app.db import write_session
from app.domain import FailureMode, Severity
from app.keys import Principal
from app.models import Alert, AlertEvent
from app.models.base import utcnow

router = APIRouter(prefix="/api/v1/alerts", tags=["alerts"])


def actor(principal: Principal) -> str:
    return f"key:{principal.key_id}"


def _get(session: Session, project_id: int, alert_id: int) -> Alert:
    alert = session.get(Alert, alert_id)
    if alert is None or alert.project_id != project_id:
        raise HTTPException(404, f"alert {alert_id} not found in this project")
    return alert


@router.get("")
def list_alerts(
    principal: ReadKey,
    session: SessionDep,
    state: Literal["firing", "acknowledged", "resolved"] | None = None,
    severity: Severity | None = None,
    failure_mode: FailureMode | None = None,
    monitor_id: Int4Id | None = None,
    limit: int = Query(100, ge=1, le=1000),
) -> dict[str, Any]:
    q = select(Alert).where(Alert.project_id == principal.project_id)
    if state is not None:
        q = q.where(Alert.state == state)
    if severity is not None:
        q = q.where(Alert.severity == severity)
    if failure_mode is not None:
        q = q.where(Alert.failure_mode == failure_mode)
    if monitor_id is not None:
        q = q.where(Alert.monitor_id == monitor_id)
    rows = session.scalars(q.order_by(Alert.last_fired_at.desc(), Alert.id.desc()).limit(limit))
    return {"alerts": [alert_dict(a) for a in rows]}


@router.get("/{alert_id}")
def get_alert(alert_id: Int8Id, principal: ReadKey, session: SessionDep) -> dict[str, Any]:
    """The alert with every transition (``events``: kind, from/to state, actor, time)."""
    alert = _get(session, principal.project_id, alert_id)
    events = session.scalars(
        select(AlertEvent).where(AlertEvent.alert_id == alert_id).order_by(AlertEvent.id)
    )
    return {**alert_dict(alert), "events": [event_dict(e) for e in events]}


def _transition(
    alert_id: int, principal: Principal, engine: Any, public_url: str, action: str
) -> dict[str, Any]:
    try:
        with write_session(engine) as session:
            alert = _get(session, principal.project_id, alert_id)
            fn = lifecycle.acknowledge if action == "ack" else lifecycle.resolve
            fn(session, alert, actor=actor(principal), now=utcnow(), public_url=public_url)
    except lifecycle.TransitionError as exc:
        raise HTTPException(409, str(exc)) from None
    return alert_dict(alert)


@router.post("/{alert_id}/ack")
def acknowledge(
    alert_id: Int8Id, principal: AnnotateKey, engine: EngineDep, settings: SettingsDep
) -> dict[str, Any]:
    """firing -> acknowledged: stops re-notification; PagerDuty gets ``acknowledge``."""
    return _transition(alert_id, principal, engine, settings.public_url, "ack")


@router.post("/{alert_id}/resolve")
def resolve(
    alert_id: Int8Id, principal: AnnotateKey, engine: EngineDep, settings: SettingsDep
) -> dict[str, Any]:
    """firing/acknowledged -> resolved; channels that were notified get ``resolve``."""
    return _transition(alert_id, principal, engine, settings.public_url, "resolve")
