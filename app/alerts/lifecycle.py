"""Alert fingerprints, deduplication, states, auto-resolve, silences and re-notification.

States: ``firing`` -> ``acknowledged`` -> ``resolved``. A fired run refreshes the open
alert of its fingerprint (count + 1) or opens a new episode (a new row, same fingerprint)
when the last one is resolved. ``auto_resolve_after`` consecutive clean runs (status
``ok``, not fired) resolve it; insufficient-data and failed runs neither count nor reset.
Reminders of a firing alert past its ``repeat_interval`` are also sent by a timer
(:mod:`app.alerts.repeats`), so they do not wait for a fired run. Every transition is an
``alert_events`` row with its actor and time. Notifications are
written to the outbox in the same transaction as the transition, so an event is never
lost between the two; they go out with their channel's group (:mod:`app.alerts.grouping`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.alerts import channels, group_payloads, grouping, sentences
from app.alerts.patterns import compile_label_pattern
from app.models import (
    Alert,
    AlertEvent,
    Channel,
    DetectorRun,
    Finding,
    Monitor,
    Project,
    Silence,
)

OPEN_STATES = ("firing", "acknowledged")
SYSTEM = "system"


class TransitionError(ValueError):
    """The alert is not in a state that allows this transition."""


def fingerprint(
    *, project_id: int, monitor_id: int, failure_mode: str, labels: Mapping[str, Any]
) -> str:
    """sha256 over project, monitor, failure mode and the sorted labels.

    >>> fingerprint(project_id=1, monitor_id=2, failure_mode="FM-6", labels={"b": "1", "a": "2"})[:12]
    '690a51cbdbd1'
    """
    key = json.dumps(
        [project_id, monitor_id, failure_mode, sorted((str(k), str(v)) for k, v in labels.items())],
        separators=(",", ":"),
    )
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


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


def _event(
    session: Session,
    alert: Alert,
    *,
    kind: str,
    actor: str,
    at: datetime,
    from_state: str | None,
    to_state: str | None,
    detail: dict[str, Any] | None = None,
) -> None:
    session.add(
        AlertEvent(
            project_id=alert.project_id,
            alert_id=alert.id,
            kind=kind,
            from_state=from_state,
            to_state=to_state,
            actor=actor,
            at=at,
            detail=detail or {},
        )
    )


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
    ``group_interval`` (:mod:`app.alerts.grouping`)."""
    ctx = _context(session, alert, public_url)
    queued = 0
    for channel in session.scalars(
        select(Channel).where(Channel.project_id == alert.project_id).order_by(Channel.id)
    ):
        if not channels.routes_to(channel, alert, event):
            continue
        grouping.enqueue(session, channel, item=group_payloads.item(channel, ctx, event), now=now)
        queued += 1
    return queued


def _open_alert(session: Session, project_id: int, fp: str) -> Alert | None:
    return session.scalar(
        select(Alert)
        .where(
            Alert.project_id == project_id, Alert.fingerprint == fp, Alert.state.in_(OPEN_STATES)
        )
        .order_by(Alert.id.desc())
        .limit(1)
    )


def summary(run: DetectorRun, *, scope: Mapping[str, Any] | None = None) -> str:
    """The alert's sentence (:mod:`app.alerts.sentences`): pages and notifications show it."""
    return sentences.sentence(
        failure_mode=run.failure_mode,
        evidence=run.evidence,
        statistic=run.statistic,
        threshold=run.threshold,
        p_value=run.p_value,
        n_current=run.n_current,
        scope=scope,
        since=run.window_start,
    )


def send_or_silence(
    session: Session, alert: Alert, *, event: str, now: datetime, public_url: str
) -> None:
    silence = silenced_by(session, alert, now=now, public_url=public_url)
    if silence is not None:
        if not alert.silenced:
            _event(
                session,
                alert,
                kind="silenced",
                actor=SYSTEM,
                at=now,
                from_state=alert.state,
                to_state=alert.state,
                detail={"silence_id": silence, "event": event},
            )
        alert.silenced = True
        return
    alert.silenced = False
    alert.last_notified_at = now
    n = notify(session, alert, event=event, now=now, public_url=public_url)
    _event(
        session,
        alert,
        kind="notified",
        actor=SYSTEM,
        at=now,
        from_state=alert.state,
        to_state=alert.state,
        detail={"event": event, "channels": n},
    )


def record_run(
    session: Session,
    *,
    monitor: Monitor,
    run: DetectorRun,
    finding: Finding | None,
    now: datetime,
    public_url: str,
    still_degraded: bool = False,
    pending: bool = False,
) -> Alert | None:
    """Apply one run to the monitor's alert; return the alert touched, if any.

    ``still_degraded``: the run did not fire, but its evidence against the frozen
    baseline is not clean either (hysteresis: a lenient level to stay open, the strict
    per-run level to open); it neither counts towards auto-resolve nor fires.
    ``pending``: the run fired but the monitor's ``for_seconds`` has not passed since the
    first of its consecutive fired runs (Prometheus's ``for``): no alert opens yet.
    """
    fp = fingerprint(
        project_id=monitor.project_id,
        monitor_id=monitor.id,
        failure_mode=monitor.failure_mode,
        labels=monitor.labels or {},
    )
    alert = _open_alert(session, monitor.project_id, fp)
    if run.fired and alert is None and pending:
        return None
    if run.fired:
        if alert is None:
            alert = Alert(
                project_id=monitor.project_id,
                monitor_id=monitor.id,
                fingerprint=fp,
                failure_mode=monitor.failure_mode,
                severity=monitor.severity,
                labels=dict(monitor.labels or {}),
                state="firing",
                summary=summary(run, scope=monitor.selection),
                evidence=run.evidence,
                count=1,
                clean_runs=0,
                first_fired_at=now,
                last_fired_at=now,
            )
            session.add(alert)
            session.flush()
            _event(
                session,
                alert,
                kind="fired",
                actor=SYSTEM,
                at=now,
                from_state=None,
                to_state="firing",
                detail={"run_id": run.id},
            )
            send_or_silence(session, alert, event="trigger", now=now, public_url=public_url)
        else:
            alert.count += 1
            alert.clean_runs = 0
            alert.last_fired_at = now
            alert.summary = summary(run, scope=monitor.selection)
            alert.evidence = run.evidence
            alert.severity = monitor.severity
            _event(
                session,
                alert,
                kind="repeat",
                actor=SYSTEM,
                at=now,
                from_state=alert.state,
                to_state=alert.state,
                detail={"run_id": run.id, "count": alert.count},
            )
            due = alert.last_notified_at is None or now - alert.last_notified_at >= timedelta(
                seconds=monitor.repeat_interval_seconds
            )
            # A silenced alert is re-checked on every repeat, so it is announced as soon as
            # its silence ends rather than a whole repeat interval later.
            if alert.state == "firing" and (due or alert.silenced):
                send_or_silence(session, alert, event="trigger", now=now, public_url=public_url)
        if finding is not None:
            finding.alert_id = alert.id
        return alert
    if alert is not None and run.status == "ok" and still_degraded:
        alert.clean_runs = 0
        return alert
    if alert is not None and run.status == "ok":
        alert.clean_runs += 1
        if alert.clean_runs >= monitor.auto_resolve_after:
            resolve(
                session,
                alert,
                actor=SYSTEM,
                now=now,
                public_url=public_url,
                detail={"clean_runs": alert.clean_runs},
            )
        return alert
    return alert


def acknowledge(
    session: Session, alert: Alert, *, actor: str, now: datetime, public_url: str
) -> Alert:
    if alert.state != "firing":
        raise TransitionError(
            f"state: alert {alert.id} is {alert.state}; only firing alerts can be acknowledged"
        )
    alert.state = "acknowledged"
    alert.acknowledged_at = now
    alert.acknowledged_by = actor
    _event(
        session,
        alert,
        kind="acknowledged",
        actor=actor,
        at=now,
        from_state="firing",
        to_state="acknowledged",
    )
    if not alert.silenced:
        notify(session, alert, event="acknowledge", now=now, public_url=public_url)
    return alert


def resolve(
    session: Session,
    alert: Alert,
    *,
    actor: str,
    now: datetime,
    public_url: str,
    detail: dict[str, Any] | None = None,
) -> Alert:
    if alert.state not in OPEN_STATES:
        raise TransitionError(f"state: alert {alert.id} is already {alert.state}")
    before = alert.state
    alert.state = "resolved"
    alert.resolved_at = now
    alert.resolved_by = actor
    _event(
        session,
        alert,
        kind="resolved",
        actor=actor,
        at=now,
        from_state=before,
        to_state="resolved",
        detail=detail,
    )
    # Only tell channels that heard about the alert; a silenced one was never announced.
    if alert.last_notified_at is not None:
        notify(session, alert, event="resolve", now=now, public_url=public_url)
    return alert
