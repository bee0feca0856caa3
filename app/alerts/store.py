"""Channel and silence CRUD, the alert queries, and the masked view of a channel.

Channel secrets are write-only: URLs (a Slack or Teams webhook URL is its own credential),
PagerDuty routing keys and HMAC signing secrets are shown masked to every role, admin
included, and nothing Telltale generates needs showing once.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from operator import eq
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.alerts.outbound import OutboundPolicy
from app.alerts.schemas import (
    MAX_SILENCE_SECONDS,
    ChannelCreate,
    ChannelOut,
    SilenceCreate,
    SilenceOut,
)
from app.db import project_row
from app.models import Alert, AlertEvent, Channel, Silence
from app.pagination import where_given


def create_channel(
    session: Session, *, project_id: int, body: ChannelCreate, outbound: OutboundPolicy
) -> Channel:
    """Raises ``OutboundRefused`` when ``outbound`` refuses the URL, ValueError otherwise."""
    if body.url:
        outbound.check_url(body.url)
    name = body.name or _default_name(session, project_id, body)
    if _name_taken(session, project_id, name):
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
        group_wait_seconds=body.group_wait_seconds,
        group_interval_seconds=body.group_interval_seconds,
    )
    session.add(channel)
    session.flush()
    return channel


def _name_taken(session: Session, project_id: int, name: str) -> bool:
    found = session.scalar(
        select(Channel.id).where(Channel.project_id == project_id, Channel.name == name)
    )
    return found is not None


def _default_name(session: Session, project_id: int, body: ChannelCreate) -> str:
    """``slack https://hooks.slack.com/…AbCd``: the masked target, never the secret."""
    target = mask_url(body.url) if body.url else mask_secret(body.routing_key)
    base = f"{body.type} {target}"[:120]
    n = 1
    name = base
    while _name_taken(session, project_id, name):
        n += 1
        name = f"{base} ({n})"
    return name


def mask_secret(value: str | None) -> str:
    """``…`` and the last four characters when the value is long enough to spare them.

    >>> mask_secret("R0ut1ngKeyR0ut1ngKeyR0ut1ngKey12"), mask_secret("R123"), mask_secret(None)
    ('…ey12', '…', '')
    """
    if not value:
        return ""
    return "…" + (value[-4:] if len(value) >= 16 else "")


def mask_url(url: str) -> str:
    """Scheme, host and port kept; path, query and fragment masked like a secret.

    >>> mask_url("https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXabcd")
    'https://hooks.slack.com/…abcd'
    >>> mask_url("http://127.0.0.1:9000"), mask_url("http://127.0.0.1:9000/hook")
    ('http://127.0.0.1:9000', 'http://127.0.0.1:9000/…')
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return mask_secret(url)
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:  # user:password@ (refused today, possible in older rows)
        authority = "…@" + authority.rsplit("@", 1)[1]
    origin = f"{scheme}://{authority}"
    if tail in ("", "/"):
        return origin + tail
    return f"{origin}/{mask_secret(tail)}"


def _masked_name(c: Channel) -> str:
    """Names defaulted from the URL or key before masking existed still carry them."""
    name = c.name
    for secret in (c.url, c.secret or "", str((c.config or {}).get("routing_key") or "")):
        if len(secret) >= 6 and secret in name:  # shorter ones would mangle honest names
            name = name.replace(
                secret, mask_url(secret) if secret == c.url else mask_secret(secret)
            )
    return name


def create_silence(
    session: Session, *, project_id: int, body: SilenceCreate, actor: str, now: datetime
) -> Silence:
    """A silence from ``body``; ValueError naming the field for times out of bounds."""
    longest = timedelta(seconds=MAX_SILENCE_SECONDS)
    starts = body.starts_at or now
    if starts - now > longest:
        raise ValueError(f"starts_at: at most {longest.days} days from now")
    ends = body.ends_at or starts + timedelta(seconds=body.duration_seconds or 0)
    if ends <= starts:
        raise ValueError("ends_at: must be after starts_at")
    if ends - starts > longest:
        raise ValueError(f"ends_at: at most {longest.days} days after starts_at")
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


def masked(c: Channel) -> ChannelOut:
    """The channel with its URL, routing key and secret-bearing name masked."""
    cfg = c.config or {}
    return ChannelOut(
        id=c.id,
        name=_masked_name(c),
        type=c.type,
        url=mask_url(c.url) if c.url else "",
        has_secret=bool(c.secret),
        routing_key=mask_secret(cfg.get("routing_key")) or None,
        min_severity=cfg.get("min_severity", "info"),
        failure_modes=cfg.get("failure_modes", []),
        enabled=c.enabled,
        group_wait_seconds=c.group_wait_seconds,
        group_interval_seconds=c.group_interval_seconds,
        created_at=c.created_at,
    )


def list_channels(session: Session, *, project_id: int) -> list[Channel]:
    return list(
        session.scalars(
            select(Channel).where(Channel.project_id == project_id).order_by(Channel.id)
        )
    )


def silence_view(s: Silence, *, now: datetime) -> SilenceOut:
    """The silence with its state at ``now``: pending, active or expired."""
    state: Literal["pending", "active", "expired"] = (
        "pending" if s.starts_at > now else ("active" if s.ends_at > now else "expired")
    )
    return SilenceOut(
        id=s.id,
        matchers=s.matchers,
        starts_at=s.starts_at,
        ends_at=s.ends_at,
        comment=s.comment,
        created_by=s.created_by,
        state=state,
    )


def list_silences(
    session: Session, *, project_id: int, active_after: datetime | None
) -> list[Silence]:
    """All silences, or only those ending after ``active_after``."""
    q = select(Silence).where(Silence.project_id == project_id)
    if active_after is not None:
        q = q.where(Silence.ends_at > active_after)
    return list(session.scalars(q.order_by(Silence.id)))


def list_alerts(
    session: Session,
    *,
    project_id: int,
    state: str | None = None,
    severity: str | None = None,
    failure_mode: str | None = None,
    monitor_id: int | None = None,
    limit: int = 100,
) -> list[Alert]:
    """Most recently fired first."""
    q = where_given(
        select(Alert).where(Alert.project_id == project_id),
        (Alert.state, eq, state),
        (Alert.severity, eq, severity),
        (Alert.failure_mode, eq, failure_mode),
        (Alert.monitor_id, eq, monitor_id),
    )
    return list(
        session.scalars(q.order_by(Alert.last_fired_at.desc(), Alert.id.desc()).limit(limit))
    )


def get_alert(session: Session, *, project_id: int, alert_id: int) -> Alert | None:
    """The alert, or None when it does not exist in this project."""
    return project_row(session, Alert, alert_id, project_id=project_id)


def alert_events(session: Session, *, alert_id: int) -> list[AlertEvent]:
    """Every transition of the alert, oldest first."""
    return list(
        session.scalars(
            select(AlertEvent).where(AlertEvent.alert_id == alert_id).order_by(AlertEvent.id)
        )
    )
