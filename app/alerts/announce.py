"""What an alert's transitions tell people: its event rows, and its notifications unless a
silence mutes them.

:mod:`app.alerts.lifecycle` decides a transition and hands it here (:func:`tell`): every
transition is an ``alert_events`` row with its actor and time (:func:`add_event`), and
what it tells channels follows. A notification goes to every channel that routes the
event (:func:`routes_to`), into the channel's group
(:mod:`app.alerts.groups`), written to the outbox in the transaction of the transition;
an alert that an active silence matches (Alertmanager's matchers: :func:`matches`) is
marked silenced instead, and announced on a later event once the silence has ended.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.alerts import channels, groups
from app.alerts.patterns import compile_label_pattern
from app.models import Alert, AlertEvent, Channel, Monitor, Project, Silence

SYSTEM = "system"


def add_event(
    session: Session, alert: Alert, kind: str, *, at: datetime, before: str | None,
    actor: str = SYSTEM, detail: dict[str, Any] | None = None,
) -> None:  # fmt: skip
    """An ``alert_events`` row: the alert went from ``before`` to the state it is in now."""
    session.add(
        AlertEvent(
            project_id=alert.project_id,
            alert_id=alert.id,
            kind=kind,
            from_state=before,
            to_state=alert.state,
            actor=actor,
            at=at,
            detail=detail or {},
        )  # fmt: skip
    )


def tell(
    session: Session, alert: Alert, kind: str, *, at: datetime, before: str | None,
    public_url: str, actor: str = SYSTEM, detail: dict[str, Any] | None = None,
    then: str | None = None,
) -> None:  # fmt: skip
    """Record the transition ``kind``, then tell channels what ``then`` says: ``trigger``
    (notify unless a silence matches), ``acknowledge`` or ``resolve`` (notify), or nothing."""
    add_event(session, alert, kind, at=at, before=before, actor=actor, detail=detail)
    if then == "trigger":
        send_or_silence(session, alert, event=then, now=at, public_url=public_url)
    elif then is not None:
        notify(session, alert, event=then, now=at, public_url=public_url)


def routes_to(channel: Channel, alert: Alert, event: str) -> bool:
    """Routing: enabled, the event is one the type understands, severity and mode match."""
    if not channel.enabled or event not in channels.EVENTS.get(channel.type, ()):
        return False
    cfg = channel.config or {}
    rank = channels.SEVERITY_RANK
    if rank.get(alert.severity, 0) < rank.get(cfg.get("min_severity", "info"), 0):
        return False
    modes = cfg.get("failure_modes") or []
    return not modes or alert.failure_mode in modes


def matches(matchers: Sequence[Mapping[str, str]], labels: Mapping[str, str]) -> bool:
    """Alertmanager semantics: every matcher must hold; a missing label is ``""``.

    >>> matches([{"name": "severity", "op": "=~", "value": "warn.*"}], {"severity": "warning"})
    True
    >>> matches([{"name": "team", "op": "!=", "value": "ml"}], {"team": "ml"})
    False
    """
    for m in matchers:
        value = labels.get(m["name"], "")
        op = m.get("op", "=")
        if op == "=" and value != m["value"]:
            return False
        if op == "!=" and value == m["value"]:
            return False
        if op in ("=~", "!~"):
            try:
                pattern = compile_label_pattern(m["value"])
            except ValueError:
                # Saved before patterns were checked with RE2: such a silence mutes nothing.
                return False
            if (pattern.fullmatch(value) is None) == (op == "=~"):
                return False
    return True


def _context(session: Session, alert: Alert, public_url: str) -> channels.AlertContext:
    monitor = session.get(Monitor, alert.monitor_id) if alert.monitor_id else None
    project = session.get(Project, alert.project_id)
    return channels.AlertContext(
        alert=alert,
        monitor_name=monitor.name if monitor else "(deleted monitor)",
        project_name=project.name if project else str(alert.project_id),
        public_url=public_url,
    )


def silenced_by(
    session: Session, alert: Alert, *, now: datetime, public_url: str = ""
) -> int | None:
    """The id of an active silence whose matchers match the alert's labels, if any."""
    labels = _context(session, alert, public_url).labels
    active = session.scalars(
        select(Silence).where(
            Silence.project_id == alert.project_id,
            Silence.starts_at <= now,
            Silence.ends_at > now,
        )
    )
    for silence in active:
        if matches(silence.matchers, labels):
            return silence.id
    return None


def notify(session: Session, alert: Alert, *, event: str, now: datetime, public_url: str) -> int:
    """Queue ``event`` for every channel that routes it; return how many were queued.

    Each goes into the channel's notification group, sent after its ``group_wait`` /
    ``group_interval`` (:mod:`app.alerts.groups`)."""
    ctx = _context(session, alert, public_url)
    queued = 0
    for channel in session.scalars(
        select(Channel).where(Channel.project_id == alert.project_id).order_by(Channel.id)
    ):
        if not routes_to(channel, alert, event):
            continue
        groups.enqueue(session, channel, item=groups.item(channel, ctx, event), now=now)
        queued += 1
    return queued


def send_or_silence(
    session: Session, alert: Alert, *, event: str, now: datetime, public_url: str
) -> None:
    """Notify ``event``, or mark the alert silenced while a silence matches it."""
    silence = silenced_by(session, alert, now=now, public_url=public_url)
    if silence is not None:
        if not alert.silenced:
            detail = {"silence_id": silence, "event": event}
            add_event(session, alert, "silenced", at=now, before=alert.state, detail=detail)
        alert.silenced = True
        return
    alert.silenced = False
    alert.last_notified_at = now
    n = notify(session, alert, event=event, now=now, public_url=public_url)
    detail = {"event": event, "channels": n}
    add_event(session, alert, "notified", at=now, before=alert.state, detail=detail)
