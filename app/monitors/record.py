"""The record stage of a run: the plan and its outcome become a persisted run, whatever happened.

``ok`` (fired or not), ``insufficient_data`` (never fires) or ``failed`` (the detector
raised, timed out, or the monitor's configuration no longer builds). An ``ok`` result is
judged against the monitor's state first (:func:`app.monitors.decision.state.verdict`: the
sequential chart, hysteresis, ``for``); a fired run writes a finding and raises or
refreshes an alert (:mod:`app.alerts.lifecycle`); a clean run counts towards auto-resolve.
Only a run that tested the data moves the baseline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app import metrics
from app.alerts import lifecycle
from app.db import write_session
from app.models import DetectorRun, Finding, Monitor
from app.monitors.decision import baseline
from app.monitors.decision import state as monitor_state
from app.monitors.detect import Outcome
from app.monitors.plan import RunPlan
from detectors import registry


@dataclass(frozen=True)
class Judgement:
    """What the run says, before anything is written."""

    status: str
    fired: bool
    evidence: dict[str, Any]
    verdict: monitor_state.Verdict | None  # None: the run tested nothing


def record(engine: Engine, plan: RunPlan, outcome: Outcome, *, public_url: str) -> DetectorRun:
    """Persist the run (and its finding, alert and the monitor's new state); return it."""
    judged = judge(plan, outcome)
    with write_session(engine) as session:
        run = _write(session, plan, outcome, judged, public_url=public_url)
    metrics.observe_monitor_run(
        project_id=plan.project_id,
        monitor=plan.monitor.name,
        failure_mode=plan.monitor.failure_mode,
        status=run.status,
        statistic=run.statistic,
        threshold=run.threshold,
        duration_s=outcome.duration_ms / 1000.0,
    )
    return run


def judge(plan: RunPlan, outcome: Outcome) -> Judgement:
    result, w = outcome.result, plan.windows
    if result is None:
        return Judgement("failed", False, {}, None)
    status = "ok" if result.status == "ok" else "insufficient_data"
    evidence = jsonable(dict(result.evidence))
    if outcome.sample:
        evidence["window_sample"] = jsonable(outcome.sample)
    verdict = None
    if status == "ok":
        verdict = monitor_state.verdict(plan.monitor, plan.policy, plan.state, w, result, plan.now)
        evidence.update(jsonable(verdict.evidence))
    fired = verdict is not None and verdict.fired
    if fired and not (verdict is not None and verdict.pending):
        # What the alert will be held against: the baseline this run freezes.
        evidence["baseline"] = baseline.describe(_advanced(plan, alert_open=True), w)
    elif status == "ok":
        evidence["baseline"] = baseline.describe(plan.state.baseline, w)
    return Judgement(status, fired, evidence, verdict)


def _advanced(plan: RunPlan, *, alert_open: bool) -> baseline.BaselineState:
    return baseline.advance(
        plan.policy, plan.state.baseline, used=plan.windows, now=plan.now,
        alert_open=alert_open, degraded_from=plan.state.pending_since,
    )  # fmt: skip


def _write(
    session: Session, plan: RunPlan, outcome: Outcome, judged: Judgement, *, public_url: str
) -> DetectorRun:
    monitor, w, result, now = plan.monitor, plan.windows, outcome.result, plan.now
    evidence, fired, verdict = judged.evidence, judged.fired, judged.verdict
    if fired and registry.checks_silence(monitor.failure_mode):
        evidence.update(monitor_state.silent_drift(session, project_id=monitor.project_id))
    run = DetectorRun(
        project_id=monitor.project_id, monitor_id=monitor.id, failure_mode=monitor.failure_mode,
        at=now, scheduled_for=plan.scheduled_for,
        window_start=w.current_start, window_end=w.current_end,
        reference_start=w.reference_start, reference_end=w.reference_end,
        status=judged.status,
        statistic=finite_or_none(result.statistic) if result else None,
        threshold=finite_or_none(result.threshold) if result else None,
        p_value=finite_or_none(result.p_value) if result else None,
        fired=fired, evidence=evidence, n_current=outcome.n_current,
        n_reference=outcome.n_reference, duration_ms=outcome.duration_ms, error=outcome.error,
        readiness_counts=outcome.readiness,
    )  # fmt: skip
    session.add(run)
    session.flush()
    live = session.get(Monitor, monitor.id)
    if live is None:  # deleted while running: keep nothing
        session.delete(run)
        return run
    live.last_run_at = now
    finding = None
    if fired:
        finding = Finding(
            project_id=run.project_id, monitor_id=run.monitor_id, run_id=run.id,
            failure_mode=run.failure_mode, severity=live.severity, at=now,
            statistic=run.statistic, threshold=run.threshold, p_value=run.p_value,
            evidence=evidence,
        )  # fmt: skip
        session.add(finding)
        session.flush()
    alert = lifecycle.record_run(
        session, monitor=live, run=run, finding=finding, now=now, public_url=public_url,
        still_degraded=verdict is not None and verdict.still_degraded,
        pending=verdict is not None and verdict.pending,
    )  # fmt: skip
    # Only a run that tested the data moves the baseline: a failed or insufficient run
    # says nothing about whether the period passed.
    if verdict is not None:
        alert_open = alert is not None and alert.state in lifecycle.OPEN_STATES
        after = monitor_state.MonitorState(
            _advanced(plan, alert_open=alert_open), verdict.chart, verdict.pending_since
        )
        monitor_state.save(session, live, after, now)
    return run


def finite_or_none(x: float | None) -> float | None:
    """NaN and infinities become NULL in the database and JSON."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def jsonable(value: Any) -> Any:
    """Evidence as plain JSON: numpy scalars to Python, NaN/inf to null, arrays to lists."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)
