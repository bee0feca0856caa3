"""What a monitor carries from run to run, and the verdict of one run given it.

The state is one ``monitor_baselines`` row: where the baseline stands
(:mod:`app.monitors.decision.baseline`) and the sequential chart (:mod:`app.monitors.decision.sequential`).
:func:`verdict` turns a detector's result into the run's outcome:

* with no alert open, the run fires when the detector fires at the per-run alpha *or*
  the chart signals (each on half the false-alert budget);
* the chart observes only against a rolling baseline: held (after a resolution), pinned
  and version baselines are shared by every observation, which voids its tables;
* with an alert open the chart is paused (it watches for onsets; it restarts after the
  alert resolves) and a run that does not fire still keeps the alert open while its
  p-value is at most ``RESOLVE_ALPHA``: the current window is not back within the frozen
  baseline yet. Opening at a strict level and closing at a lenient one is hysteresis,
  which keeps an alert from flapping on a failure near the detection limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Alert, Monitor, MonitorBaseline
from app.monitors.decision import sequential
from app.monitors.decision.baseline import BaselinePolicy, BaselineState, Windows
from detectors.result import DetectorResult

RESOLVE_ALPHA = 0.05
# The modes whose alerts say error rates moved; FM-6 drift without them is "silent".
ERROR_RATE_MODES = ("FM-1", "FM-2", "OUTCOME")


@dataclass(frozen=True)
class MonitorState:
    baseline: BaselineState | None = None
    chart: sequential.ChartState = field(default_factory=sequential.ChartState)
    pending_since: datetime | None = None

    @property
    def alert_open(self) -> bool:
        """Whether the last run that tested data left an alert open (the baseline froze)."""
        return self.baseline is not None and self.baseline.frozen_since is not None


def load(session: Session, monitor_id: int) -> MonitorState:
    row = session.get(MonitorBaseline, monitor_id)
    if row is None:
        return MonitorState()
    return MonitorState(
        BaselineState(
            good_until=row.good_until,
            frozen_since=row.frozen_since,
            hold_until=row.hold_until,
            degradation_started_at=row.degradation_started_at,
        ),
        sequential.ChartState(z=row.chart_z, t=row.chart_t, last_window_end=row.chart_window_end),
        row.pending_since,
    )


def save(session: Session, monitor: Monitor, state: MonitorState, now: datetime) -> None:
    if state.baseline is None:
        return
    row = session.get(MonitorBaseline, monitor.id)
    if row is None:
        row = MonitorBaseline(monitor_id=monitor.id, project_id=monitor.project_id)
        session.add(row)
    row.good_until = state.baseline.good_until
    row.frozen_since = state.baseline.frozen_since
    row.hold_until = state.baseline.hold_until
    row.degradation_started_at = state.baseline.degradation_started_at
    row.chart_z = state.chart.z
    row.chart_t = state.chart.t
    row.chart_window_end = state.chart.last_window_end
    row.pending_since = state.pending_since
    row.updated_at = now


@dataclass(frozen=True)
class Verdict:
    fired: bool
    still_degraded: bool
    chart: sequential.ChartState
    evidence: dict[str, Any]  # added to the run's evidence
    pending: bool = False  # fired, but not for ``for_seconds`` yet: no alert opens
    pending_since: datetime | None = None


def verdict(
    monitor: Monitor, policy: BaselinePolicy, state: MonitorState, w: Windows,
    result: DetectorResult, now: datetime,
) -> Verdict:  # fmt: skip
    """The outcome of an ``ok`` result given the monitor's state (see the module's notes)."""
    v = _verdict(monitor, policy, state, w, result)
    if state.alert_open or not v.fired or monitor.for_seconds <= 0:
        return v
    # Prometheus's ``for``: the condition must hold through consecutive runs this long.
    since = state.pending_since or now
    pending = (now - since).total_seconds() < monitor.for_seconds
    extra = {**v.evidence, "pending_since": since.isoformat(), "pending": pending}
    return replace(v, pending=pending, pending_since=since if pending else None, evidence=extra)


def _verdict(
    monitor: Monitor, policy: BaselinePolicy, state: MonitorState, w: Windows,
    result: DetectorResult,
) -> Verdict:  # fmt: skip
    fired = bool(result.fired)
    p = result.p_value
    if state.alert_open:
        degraded = not fired and p is not None and p <= RESOLVE_ALPHA
        extra: dict[str, Any] = {"resolve_alpha": RESOLVE_ALPHA, "still_degraded": degraded}
        if monitor.sequential:
            extra["sequential"] = {"paused": "an alert is open"}
        return Verdict(fired, degraded, sequential.ChartState(), extra)
    if not monitor.sequential:
        return Verdict(fired, False, state.chart, {})
    if w.mode != "rolling":
        # A held, pinned or version baseline is the same for every observation, and what is
        # shared is its own sampling error: the chart's run-length tables would not hold
        # (app.monitors.decision.sequential). The run test, valid against any clean baseline, stays.
        paused = {"paused": f"the baseline is {w.mode}: every observation would share it"}
        return Verdict(fired, False, state.chart, {"sequential": paused})
    arl0, inflation = sequential.chart_for(
        interval_seconds=monitor.interval_seconds,
        current_seconds=policy.current.total_seconds(),
        reference_seconds=policy.reference.total_seconds(),
        ert_days=monitor.expected_days_between_false_alerts,
    )
    chart, ev = sequential.update(
        state.chart, p_value=p, window_start=w.current_start, window_end=w.current_end,
        arl0=arl0, inflation=inflation,
    )  # fmt: skip
    extra = {"sequential": ev}
    if ev["signal"] and not fired:
        extra["opened_by"] = "sequential chart"
    elif fired:
        extra["opened_by"] = "run test"
    return Verdict(fired or bool(ev["signal"]), False, chart, extra)


def silent_drift(session: Session, *, project_id: int) -> dict[str, Any]:
    """FM-6's label: embedding drift while the error-rate monitors (FM-1, FM-2) are quiet.

    The mission's "silent degradation" is exactly this case: nothing errors, the inputs or
    outputs moved. With an FM-1/FM-2 alert open the drift is loud (and likely the same
    incident), and the label says which alerts.
    """
    loud = list(
        session.scalars(
            select(Alert.id).where(
                Alert.project_id == project_id,
                Alert.failure_mode.in_(ERROR_RATE_MODES),
                Alert.state.in_(("firing", "acknowledged")),
            )
        )
    )
    return {"silent": not loud, "error_rate_alerts_open": loud}
