"""The decide stage of a run: what the run says, worked out before anything is written.

Between detect and record (:mod:`app.monitors.runner`): the detector's result becomes the
run's status (``ok``, ``insufficient_data`` or ``failed``; a plan with no reference version
is ``insufficient_data`` without a detector), its evidence and numbers (the record stage
makes them plain JSON), and for an ``ok`` result the monitor's verdict (:func:`verdict`)
and the baseline the run leaves behind (:func:`app.monitors.decision.baseline.advance`),
for either outcome of the alert, which only the record stage learns. Nothing here reads
or writes the database, so the record stage is only writing.

The verdict, given what the monitor carries from run to run
(:mod:`app.monitors.decision.state`):

* with no alert open, the run fires when the detector fires at the per-run alpha *or*
  the chart signals (each on half the false-alert budget);
* the chart observes only against a rolling baseline: held (after a resolution), pinned
  and version baselines are shared by every observation, which voids its tables;
* with an alert open the chart is paused (it watches for onsets; it restarts after the
  alert resolves) and a run that does not fire still keeps the alert open while its
  p-value is at most ``RESOLVE_ALPHA``: the current window is not back within the frozen
  baseline yet. Opening at a strict level and closing at a lenient one is hysteresis,
  which keeps an alert from flapping on a failure near the detection limit;
* Prometheus's ``for``: with ``for_seconds`` set, fired runs open no alert until they
  have held that long (the run is ``pending``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from app.models import Monitor
from app.monitors.decision import baseline, sequential
from app.monitors.decision import state as monitor_state
from app.monitors.detect import Outcome
from app.monitors.plan import RunPlan
from detectors.result import DetectorResult

RESOLVE_ALPHA = 0.05


@dataclass(frozen=True)
class Judgement:
    """What the run says. ``verdict`` is None when the run tested nothing (failed or
    insufficient data): such a run neither moves the baseline nor counts towards
    auto-resolve. ``baseline_if_open`` / ``baseline_if_closed``: the baseline after this
    run, as the alert stands open or not once the run is recorded."""

    status: str
    fired: bool
    evidence: dict[str, Any]
    verdict: Verdict | None
    statistic: float | None = None
    threshold: float | None = None
    p_value: float | None = None
    state_if_open: monitor_state.MonitorState | None = None
    state_if_closed: monitor_state.MonitorState | None = None

    @property
    def pending(self) -> bool:
        return self.verdict is not None and self.verdict.pending

    @property
    def still_degraded(self) -> bool:
        return self.verdict is not None and self.verdict.still_degraded


def decide(plan: RunPlan, outcome: Outcome) -> Judgement:
    """The run's status, evidence, verdict and next baseline."""
    result, w = outcome.result, plan.windows
    if plan.no_reference is not None:  # no version to compare with: not an error
        return Judgement("insufficient_data", False, {"reason": plan.no_reference}, None)
    if result is None:
        return Judgement("failed", False, {}, None)
    found = verdict(plan.monitor, plan.policy, plan.state, w, result, plan.now)
    numbers = (result.statistic, result.threshold, result.p_value)
    sample = {"window_sample": outcome.sample} if outcome.sample else {}
    evidence = {**result.evidence, **sample, **(found.evidence if found else {})}
    if found is None:
        return Judgement("insufficient_data", False, evidence, None, *numbers)
    before, since = plan.state.baseline, plan.state.pending_since
    onset = _change_started_at(result)
    if_open, if_closed = (
        baseline.advance(
            plan.policy, before, used=w, now=plan.now, alert_open=o, degraded_from=since,
            onset=onset,
        )
        for o in (True, False)
    )  # fmt: skip
    # What an alert is held against: the baseline a firing run freezes; otherwise the
    # baseline the run compared with.
    held = if_open if found.fired and not found.pending else before
    evidence["baseline"] = baseline.describe(held, w)
    chart, pending_since = found.chart, found.pending_since
    return Judgement(
        "ok", found.fired, evidence, found, *numbers,
        state_if_open=monitor_state.MonitorState(if_open, chart, pending_since),
        state_if_closed=monitor_state.MonitorState(if_closed, chart, pending_since),
    )  # fmt: skip


def _change_started_at(result: DetectorResult) -> datetime | None:
    """The detector's estimate of when the change began (``change_started_at``, epoch s)."""
    at = (result.evidence or {}).get("change_started_at")
    if isinstance(at, (int, float)) and not isinstance(at, bool) and math.isfinite(at):
        return datetime.fromtimestamp(float(at), tz=UTC)
    return None


@dataclass(frozen=True)
class Verdict:
    fired: bool
    still_degraded: bool
    chart: sequential.ChartState
    evidence: dict[str, Any]  # added to the run's evidence
    pending: bool = False  # fired, but not for ``for_seconds`` yet: no alert opens
    pending_since: datetime | None = None


def verdict(
    monitor: Monitor, policy: baseline.BaselinePolicy, state: monitor_state.MonitorState,
    w: baseline.Windows, result: DetectorResult, now: datetime,
) -> Verdict | None:  # fmt: skip
    """The outcome of a result given the monitor's state (see the module's notes); None
    when the detector tested nothing (insufficient data)."""
    if result.status != "ok":
        return None
    v = _verdict(monitor, policy, state, w, result)
    if state.alert_open or not v.fired or monitor.for_seconds <= 0:
        return v
    # Prometheus's ``for``: the condition must hold through consecutive runs this long.
    since = state.pending_since or now
    pending = (now - since).total_seconds() < monitor.for_seconds
    extra = {**v.evidence, "pending_since": since.isoformat(), "pending": pending}
    return replace(v, pending=pending, pending_since=since if pending else None, evidence=extra)


def _verdict(
    monitor: Monitor, policy: baseline.BaselinePolicy, state: monitor_state.MonitorState,
    w: baseline.Windows, result: DetectorResult,
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
