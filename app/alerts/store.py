"""Channel and silence CRUD helpers, and the row -> JSON shapes the routes return."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.alerts.outbound import OutboundPolicy
from app.alerts.schemas import ChannelCreate, SilenceCreate
from app.models import Alert, AlertEvent, Channel, Silence


def create_channel(
    session: Session, *, project_id: int, body: ChannelCreate, outbound: OutboundPolicy
) -> Channel:
    """Raises ``OutboundRefused`` when ``outbound`` refuses the URL, ValueError otherwise."""
    if body.url:
        outbound.check_url(body.url)
    name = body.name or f"{body.type}-{body.url or body.routing_key}"[:128]
    if session.scalar(
        select(Channel.id).where(Channel.project_id == project_id, Channel.name == name)
    ):
        raise ValueError(f"name: a channel named {name!r} already exists")
    config: dict[str, Any] = {
        "min_severity": body.min_severity,
        "failure_modes": body.failure_modes,
    }
    if body.routing_key:
        config["routing_key"] = body.routing_key
    channel = Channel(
        project_id=project_id,
        name=name,
        type=body.type,
        url=body.url,
        secret=body.secret,
        config=config,
        enabled=body.enabled,
    )
    session.add(channel)
    session.flush()
    return channel


def create_silence(
    session: Session, *, project_id: int, body: SilenceCreate, actor: str, now: datetime
) -> Silence:
    starts = body.starts_at or now
    ends = body.ends_at or starts + timedelta(seconds=body.duration_seconds or 0)
    if ends <= starts:
        raise ValueError("ends_at: must be after starts_at")
    silence = Silence(
        project_id=project_id,
        matchers=[m.model_dump() for m in body.matchers],
        starts_at=starts,
        ends_at=ends,
        comment=body.comment,
        created_by=actor,
        created_at=now,
    )
    session.add(silence)
    session.flush()
    return silence


def channel_dict(c: Channel) -> dict[str, Any]:
    cfg = c.config or {}
    return {
        "id": c.id,
        "name": c.name,
        "type": c.type,
        "url": c.url,
        "has_secret": bool(c.secret),
        "routing_key": cfg.get("routing_key"),
        "min_severity": cfg.get("min_severity", "info"),
        "failure_modes": cfg.get("failure_modes", []),
        "enabled": c.enabled,
        "created_at": c.created_at,
    }


def silence_dict(s: Silence, now: datetime) -> dict[str, Any]:
    state = "pending" if s.starts_at > now else ("active" if s.ends_at > now else "expired")
    return {
        "id": s.id,
        "matchers": s.matchers,
        "starts_at": s.starts_at,
        "ends_at": s.ends_at,
        "comment": s.comment,
        "created_by": s.created_by,
        "state": state,
    }


def alert_dict(a: Alert) -> dict[str, Any]:
    return {
        "id": a.id,
        "fingerprint": a.fingerprint,
        "monitor_id": a.monitor_id,
        "failure_mode": a.failure_mode,
        "severity": a.severity,
        "labels": a.labels,
        "state": a.state,
        "silenced": a.silenced,
        "summary": a.summary,
        "evidence": a.evidence,
        "count": a.count,
        "clean_runs": a.clean_runs,
        "first_fired_at": a.first_fired_at,
        "last_fired_at": a.last_fired_at,
        "last_notified_at": a.last_notified_at,
        "acknowledged_at": a.acknowledged_at,
        "acknowledged_by": a.acknowledged_by,
        "resolved_at": a.resolved_at,
        "resolved_by": a.resolved_by,
    }


def event_dict(e: AlertEvent) -> dict[str, Any]:
    return {
        "id": e.id,
        "kind": e.kind,
        "from_state": e.from_state,
        "to_state": e.to_state,
        "actor": e.actor,
        "at": e.at,
        "detail": e.detail,
    }
