"""What an alert's transitions tell people: its event rows, and its notifications unless a
silence mutes them.

:mod:`app.alerts.lifecycle` decides a transition (a :class:`Transition`) and hands it
here (:func:`tell`): every transition is an ``alert_events`` row with its actor and time
(:func:`add_event`), and what it tells channels follows (:func:`send`, also the
reminders' way in, :mod:`app.alerts.repeats`). A notification goes to every channel that
routes the event (:func:`routes_to`), carrying what the channel's type receives
(:func:`app.alerts.channels.item`), into the channel's group (:mod:`app.alerts.groups`),
written to the outbox in the transaction of the transition; a trigger that an active
silence matches (Alertmanager's matchers: :func:`matches`) marks the alert silenced
instead, and it is announced on a later trigger once the silence has ended.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.alerts import channels, groups
from app.alerts.context import AlertContext
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


@dataclass(frozen=True)
class Transition:
    """What happened to an alert, as :mod:`app.alerts.lifecycle` decided it.

    ``kind`` names the ``alert_events`` row (``fired``, ``repeat``, ``acknowledged``,
    ``resolved``); ``then`` is what channels are told: ``trigger`` (unless a silence
    matches), ``acknowledge``, ``resolve``, or nothing (None)."""

    kind: str
    before: str | None
    actor: str = SYSTEM
    detail: dict[str, Any] | None = None
    then: str | None = None


def tell(session: Session, alert: Alert, t: Transition, *, at: datetime, public_url: str) -> None:
    """Record the transition, then tell channels what it says (:func:`send`)."""
    add_event(session, alert, t.kind, at=at, before=t.before, actor=t.actor, detail=t.detail)
    if t.then is not None:
        send(session, alert, event=t.then, now=at, public_url=public_url)


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


def _context(session: Session, alert: Alert, public_url: str) -> AlertContext:
    monitor = session.get(Monitor, alert.monitor_id) if alert.monitor_id else None
    project = session.get(Project, alert.project_id)
    return AlertContext(
        alert=alert,
        monitor_name=monitor.name if monitor else "(deleted monitor)",
        project_name=project.name if project else str(alert.project_id),
        public_url=public_url,
    )


def _silence_matching(
    session: Session, project_id: int, labels: Mapping[str, str], *, now: datetime
) -> int | None:
    active = session.scalars(
        select(Silence).where(
            Silence.project_id == project_id,
            Silence.starts_at <= now,
            Silence.ends_at > now,
        )
    )
    for silence in active:
        if matches(silence.matchers, labels):
            return silence.id
    return None


def send(session: Session, alert: Alert, *, event: str, now: datetime, public_url: str) -> None:
    """Queue ``event`` for every channel that routes it.

    A ``trigger`` is held while an active silence matches the alert (the alert is marked
    silenced, with a ``silenced`` event the first time), and otherwise recorded as a
    ``notified`` event with the number of channels. Each notification goes into its
    channel's group, sent after the group's wait or interval (:mod:`app.alerts.groups`).
    """
    ctx = _context(session, alert, public_url)
    if event == "trigger":
        silence = _silence_matching(session, alert.project_id, ctx.labels, now=now)
        if silence is not None:
            if not alert.silenced:
                detail = {"silence_id": silence, "event": event}
                add_event(session, alert, "silenced", at=now, before=alert.state, detail=detail)
            alert.silenced = True
            return
    routed = [
        channel
        for channel in session.scalars(
            select(Channel).where(Channel.project_id == alert.project_id).order_by(Channel.id)
        )
        if routes_to(channel, alert, event)
    ]
    if event == "trigger":
        alert.silenced = False
        alert.last_notified_at = now
        detail = {"event": event, "channels": len(routed)}
        add_event(session, alert, "notified", at=now, before=alert.state, detail=detail)
    for channel in routed:
        groups.enqueue(session, channel, item=channels.item(channel, ctx, event), now=now)
