"""The decide stage of a run: what the run says, worked out before anything is written.

Between detect and record (:mod:`app.monitors.runner`): the detector's result becomes the
run's status (``ok``, ``insufficient_data`` or ``failed``), its evidence as plain JSON, and
for an ``ok`` result the monitor's verdict (:func:`app.monitors.decision.state.verdict`:
the sequential chart, hysteresis, ``for``) and the baseline the run leaves behind
(:func:`app.monitors.decision.baseline.advance`), for either outcome of the alert, which
only the record stage learns. Nothing here reads or writes the database, so the record
stage is only writing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.monitors.decision import baseline
from app.monitors.decision import state as monitor_state
from app.monitors.detect import Outcome
from app.monitors.plan import RunPlan


@dataclass(frozen=True)
class Judgement:
    """What the run says. ``verdict`` is None when the run tested nothing (failed or
    insufficient data): such a run neither moves the baseline nor counts towards
    auto-resolve. ``baseline_if_open`` / ``baseline_if_closed``: the baseline after this
    run, as the alert stands open or not once the run is recorded."""

    status: str
    fired: bool
    evidence: dict[str, Any]
    verdict: monitor_state.Verdict | None
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
    if result is None:
        return Judgement("failed", False, {}, None)
    numbers = (
        finite_or_none(result.statistic),
        finite_or_none(result.threshold),
        finite_or_none(result.p_value),
    )
    evidence = jsonable(dict(result.evidence))
    if outcome.sample:
        evidence["window_sample"] = jsonable(outcome.sample)
    if result.status != "ok":
        return Judgement("insufficient_data", False, evidence, None, *numbers)
    verdict = monitor_state.verdict(plan.monitor, plan.policy, plan.state, w, result, plan.now)
    evidence.update(jsonable(verdict.evidence))
    if_open, if_closed = (_advanced(plan, alert_open=o) for o in (True, False))
    # What an alert is held against: the baseline a firing run freezes; otherwise the
    # baseline the run compared with.
    held = if_open if verdict.fired and not verdict.pending else plan.state.baseline
    evidence["baseline"] = baseline.describe(held, w)
    chart, pending_since = verdict.chart, verdict.pending_since
    return Judgement(
        "ok", verdict.fired, evidence, verdict, *numbers,
        state_if_open=monitor_state.MonitorState(if_open, chart, pending_since),
        state_if_closed=monitor_state.MonitorState(if_closed, chart, pending_since),
    )  # fmt: skip


def _advanced(plan: RunPlan, *, alert_open: bool) -> baseline.BaselineState:
    return baseline.advance(
        plan.policy, plan.state.baseline, used=plan.windows, now=plan.now,
        alert_open=alert_open, degraded_from=plan.state.pending_since,
    )  # fmt: skip


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
