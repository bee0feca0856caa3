"""The record stage of a run: the plan, its outcome and what was decided become rows.

Whatever happened (:mod:`app.monitors.decide` says what: ``ok``, fired or not,
``insufficient_data`` or ``failed``), the run is written; a fired run writes a finding and
raises or refreshes an alert (:mod:`app.alerts.lifecycle`); a clean run counts towards
auto-resolve; a run that tested the data saves the monitor's new state (baseline, chart).
All in one transaction, so an alert never exists without its run. The evidence and numbers
become plain JSON here, where the JSON columns are written (:func:`jsonable`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app import metrics
from app.alerts import lifecycle
from app.db import write_session
from app.models import DetectorRun, Finding, Monitor
from app.monitors.decide import Judgement
from app.monitors.decision import state as monitor_state
from app.monitors.detect import Outcome
from app.monitors.plan import RunPlan


def record(
    engine: Engine, plan: RunPlan, outcome: Outcome, judged: Judgement, *, public_url: str
) -> DetectorRun:
    """Persist the run (and its finding, alert and the monitor's new state); return it."""
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


def _write(
    session: Session, plan: RunPlan, outcome: Outcome, judged: Judgement, *, public_url: str
) -> DetectorRun:
    monitor, w, now = plan.monitor, plan.windows, plan.now
    evidence, fired = jsonable(judged.evidence), judged.fired
    if fired and plan.checks_silence:
        evidence = {**evidence, **monitor_state.silent_drift(session, project_id=plan.project_id)}
    run = DetectorRun(
        project_id=monitor.project_id, monitor_id=monitor.id, failure_mode=monitor.failure_mode,
        at=now, scheduled_for=plan.scheduled_for,
        window_start=w.current_start, window_end=w.current_end,
        reference_start=w.reference_start, reference_end=w.reference_end,
        status=judged.status,
        statistic=finite_or_none(judged.statistic), threshold=finite_or_none(judged.threshold),
        p_value=finite_or_none(judged.p_value),
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
    if plan.alerts_per_group:  # an alert rule's: one alert per group of its evidence
        alerts = lifecycle.record_groups(
            session, monitor=live, run=run, finding=finding, now=now, public_url=public_url
        )
        alert_open = any(a.state in lifecycle.OPEN_STATES for a in alerts)
    else:
        alert = lifecycle.record_run(
            session, monitor=live, run=run, finding=finding, now=now, public_url=public_url,
            still_degraded=judged.still_degraded, pending=judged.pending,
        )  # fmt: skip
        alert_open = alert is not None and alert.state in lifecycle.OPEN_STATES
    # Only a run that tested the data moves the baseline: a failed or insufficient run
    # says nothing about whether the period passed.
    after = judged.state_if_open if alert_open else judged.state_if_closed
    if after is not None:
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
