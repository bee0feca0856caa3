"""Alert fingerprints, deduplication, states, auto-resolve, silences and re-notification.

States: ``firing`` -> ``acknowledged`` -> ``resolved``. A fired run refreshes the open
alert of its fingerprint (count + 1) or opens a new episode (a new row, same fingerprint)
when the last one is resolved. ``auto_resolve_after`` consecutive clean runs (status
``ok``, not fired) resolve it; insufficient-data and failed runs neither count nor reset.
Reminders of a firing alert past its ``repeat_interval`` are also sent by a timer
(:mod:`app.alerts.repeats`), so they do not wait for a fired run. Every transition is an
``alert_events`` row with its actor and time, and its notifications are written to the
outbox in the same transaction, so an event is never lost between the two
(:mod:`app.alerts.announce`: events, silences, notifications).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.alerts import sentences
from app.alerts.announce import SYSTEM, Transition, tell
from app.models import Alert, DetectorRun, Finding, Monitor

OPEN_STATES = ("firing", "acknowledged")


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
    if run.fired:
        if alert is None and pending:
            return None
        alert, told = _fired(session, monitor, run, alert, fp=fp, now=now)
        if finding is not None:
            finding.alert_id = alert.id
    elif alert is None or run.status != "ok":
        return alert
    elif still_degraded:
        alert.clean_runs = 0
        return alert
    else:
        alert.clean_runs += 1
        if alert.clean_runs < monitor.auto_resolve_after:
            return alert
        told = _resolved(alert, actor=SYSTEM, now=now, detail={"clean_runs": alert.clean_runs})
    tell(session, alert, told, at=now, public_url=public_url)
    return alert


def _fired(
    session: Session, monitor: Monitor, run: DetectorRun, alert: Alert | None, *, fp: str,
    now: datetime,
) -> tuple[Alert, Transition]:  # fmt: skip
    """A fired run opens a new alert, or refreshes the open one (a reminder when due)."""
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
        return alert, Transition("fired", None, detail={"run_id": run.id}, then="trigger")
    alert.count += 1
    alert.clean_runs = 0
    alert.last_fired_at = now
    run.evidence = _keep_onset(alert.evidence, run.evidence)
    alert.summary = summary(run, scope=monitor.selection)
    alert.evidence = run.evidence
    alert.severity = monitor.severity
    due = alert.last_notified_at is None or now - alert.last_notified_at >= timedelta(
        seconds=monitor.repeat_interval_seconds
    )
    # A silenced alert is re-checked on every repeat, so it is announced as soon as its
    # silence ends rather than a whole repeat interval later.
    remind = alert.state == "firing" and (due or alert.silenced)
    detail = {"run_id": run.id, "count": alert.count}
    return alert, Transition(
        "repeat", alert.state, detail=detail, then="trigger" if remind else None
    )


def _keep_onset(opened: Any, refreshed: Any) -> Any:
    """The refreshing run's evidence with the opening run's word on how the degradation's
    start was found (the frozen baseline keeps the time, not how it was found)."""
    if not isinstance(opened, dict) or not isinstance(refreshed, dict):
        return refreshed
    was, now = opened.get("baseline"), refreshed.get("baseline")
    if not isinstance(was, dict) or not isinstance(now, dict) or "onset" in now:
        return refreshed
    if "onset" not in was or was.get("degradation_started_at") != now.get("degradation_started_at"):
        return refreshed
    return {**refreshed, "baseline": {**now, "onset": was["onset"]}}


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
    then = None if alert.silenced else "acknowledge"
    told = Transition("acknowledged", "firing", actor=actor, then=then)
    tell(session, alert, told, at=now, public_url=public_url)
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
    told = _resolved(alert, actor=actor, now=now, detail=detail)
    tell(session, alert, told, at=now, public_url=public_url)
    return alert


def _resolved(
    alert: Alert, *, actor: str, now: datetime, detail: dict[str, Any] | None
) -> Transition:
    if alert.state not in OPEN_STATES:
        raise TransitionError(f"state: alert {alert.id} is already {alert.state}")
    before = alert.state
    alert.state = "resolved"
    alert.resolved_at = now
    alert.resolved_by = actor
    # Only tell channels that heard about the alert; a silenced one was never announced.
    heard = alert.last_notified_at is not None
    return Transition(
        "resolved", before, actor=actor, detail=detail, then="resolve" if heard else None
    )
