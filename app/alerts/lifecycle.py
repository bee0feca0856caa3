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

A run whose detector alerts per group (an alert rule grouped by agent, model...) applies
each group's verdict to the alert of its own fingerprint (:func:`record_groups`): the
same states, silences, repeats and channels, one alert per group.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
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


@dataclass(frozen=True)
class GroupVerdict:
    """One group of a run whose detector alerts per group (an alert rule's): its labels
    (added to the monitor's, so they are in the fingerprint, silences match them and
    channels see them), whether it fired and at which severity, its sentence and evidence.
    ``pending``: at its level, but not for the rule's ``for`` yet; ``clean``: a verdict that
    counts towards resolving its alert (False: an evaluation that decides nothing)."""

    labels: Mapping[str, str]
    fired: bool
    severity: str
    summary: str
    evidence: Mapping[str, Any]
    pending: bool = False
    clean: bool = True
    # A whole run's verdict (not a group's): a refreshed alert is worded from the run.
    from_run: bool = False


def group_verdicts(evidence: Mapping[str, Any], *, severity: str) -> list[GroupVerdict]:
    """The verdicts a per-group detector left in a run's evidence (``groups``: each with its
    ``labels``, the level that ``fired`` or None, ``pending``, ``clean`` and ``summary``);
    ``severity`` for a group that fired without naming a level."""
    out = []
    for g in evidence.get("groups") or []:
        rest = {k: v for k, v in evidence.items() if k != "groups"}
        out.append(GroupVerdict(
            labels={str(k): str(v) for k, v in (g.get("labels") or {}).items()},
            fired=g.get("fired") is not None, severity=g.get("fired") or severity,
            summary=str(g.get("summary", "")), evidence={**rest, "group": g},
            pending=bool(g.get("pending")), clean=bool(g.get("clean", True)),
        ))  # fmt: skip
    return out


def gone_verdict(evidence: Mapping[str, Any], labels: dict[str, str], alert: Alert) -> GroupVerdict:
    """The verdict of a group with an open alert that a run's evidence no longer names (its
    traffic is gone): the evidence's ``no_data_mode`` decides, as for an empty window
    (``ok``: clean; ``alerting``: it fires at ``no_data_severity``; ``keep``: neither)."""
    mode = evidence.get("no_data_mode", "ok")
    where = ", ".join(f"{k}={v}" for k, v in labels.items())
    said = f"No traffic{f' for {where}' if where else ''} in the rule's window."
    return GroupVerdict(
        labels=labels, fired=mode == "alerting",
        severity=str(evidence.get("no_data_severity") or alert.severity),
        summary=said if mode == "alerting" else alert.summary, evidence=alert.evidence or {},
        clean=mode == "ok",
    )  # fmt: skip


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
    verdict = GroupVerdict(
        labels={}, fired=run.fired, severity=monitor.severity,
        summary=summary(run, scope=monitor.selection), evidence=run.evidence, pending=pending,
        clean=not still_degraded, from_run=True,
    )  # fmt: skip
    return _apply(session, monitor, run, finding, verdict, now=now, public_url=public_url)


def record_groups(
    session: Session, *, monitor: Monitor, run: DetectorRun, finding: Finding | None,
    now: datetime, public_url: str,
) -> list[Alert]:  # fmt: skip
    """Apply one run to the alert of each group its evidence names (:func:`group_verdicts`);
    a group with an open alert that the run did not see (its traffic is gone) gets
    :func:`gone_verdict`. Returns the alerts touched; the run's finding links the first
    that fired. A run that tested nothing (failed, insufficient) changes no alert."""
    groups = group_verdicts(run.evidence or {}, severity=monitor.severity)
    touched: list[Alert] = []
    seen = set()
    for g in groups:
        fp = _fingerprint(monitor, g.labels)
        seen.add(fp)
        alert = _apply(session, monitor, run, finding if g.fired else None, g, now=now,
                       public_url=public_url)  # fmt: skip
        if alert is not None:
            touched.append(alert)
        if finding is not None and g.fired and finding.alert_id is not None:
            finding = None  # linked to the first group that fired
    open_alerts = session.scalars(
        select(Alert).where(Alert.monitor_id == monitor.id, Alert.state.in_(OPEN_STATES))
    ).all()
    for alert in open_alerts:
        if alert.fingerprint in seen:
            continue
        verdict = gone_verdict(run.evidence or {}, _group_labels(monitor, alert), alert)
        if _apply(session, monitor, run, None, verdict, now=now, public_url=public_url):
            touched.append(alert)
    return touched


def _group_labels(monitor: Monitor, alert: Alert) -> dict[str, str]:
    own = monitor.labels or {}
    return {k: v for k, v in (alert.labels or {}).items() if k not in own}


def _fingerprint(monitor: Monitor, labels: Mapping[str, Any]) -> str:
    return fingerprint(
        project_id=monitor.project_id,
        monitor_id=monitor.id,
        failure_mode=monitor.failure_mode,
        labels={**(monitor.labels or {}), **labels},
    )


def _apply(
    session: Session, monitor: Monitor, run: DetectorRun, finding: Finding | None,
    verdict: GroupVerdict, *, now: datetime, public_url: str,
) -> Alert | None:  # fmt: skip
    fp = _fingerprint(monitor, verdict.labels)
    alert = _open_alert(session, monitor.project_id, fp)
    if verdict.fired:
        if alert is None and verdict.pending:
            return None
        alert, told = _fired(session, monitor, run, alert, fp=fp, now=now, verdict=verdict)
        if finding is not None:
            finding.alert_id = alert.id
    elif alert is None or run.status != "ok":
        return alert
    elif not verdict.clean:
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
    now: datetime, verdict: GroupVerdict,
) -> tuple[Alert, Transition]:  # fmt: skip
    """A fired run opens a new alert, or refreshes the open one (a reminder when due)."""
    if alert is None:
        alert = Alert(
            project_id=monitor.project_id,
            monitor_id=monitor.id,
            fingerprint=fp,
            failure_mode=monitor.failure_mode,
            severity=verdict.severity,
            labels={**(monitor.labels or {}), **verdict.labels},
            state="firing",
            summary=verdict.summary,
            evidence=dict(verdict.evidence),
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
    if verdict.from_run:  # the monitor's own verdict: worded from its run
        run.evidence = _keep_onset(alert.evidence, run.evidence)
        alert.summary = summary(run, scope=monitor.selection)
        alert.evidence = run.evidence
    else:
        alert.summary = verdict.summary
        alert.evidence = dict(verdict.evidence)
    alert.severity = verdict.severity
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
