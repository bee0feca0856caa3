"""A rule evaluated at every step of its series: values, levels, what fired, the episodes.

One function for the preview and for every run, so the preview shows what the saved rule
does: a run evaluates the series that ends at its own time and reads the last step
(:class:`detectors.rules.detector.RuleDetector`); the preview evaluates a month of it and
reads every step. Steps are ``interval_seconds`` apart and end on the last bucket; a step
is evaluated once its window is whole (``window_seconds`` of buckets behind it).

>>> from detectors.rules.spec import RuleSpec
>>> from detectors.rules.series import GroupSeries, MetricSeries
>>> spec = RuleSpec.model_validate({"metric": "trace_error_rate", "window_seconds": 300,
...     "condition": {"type": "static", "op": "above", "warning": 0.2, "for_seconds": 300}})
>>> errors = np.array([0., 0, 5, 5, 5, 0, 0, 0, 0])
>>> g = GroupSeries((), numerator=errors, denominator=np.full(9, 10.0))
>>> ev = evaluate(spec, MetricSeries(0, (g,)), interval_seconds=300, auto_resolve_after=2)
>>> ev.groups[0].fired.tolist()
[0, 0, 0, 1, 1, 0, 0, 0, 0]
>>> e = ev.groups[0].episodes[0]
>>> e.opened_at, e.resolved_at, e.severity
(1200, 2100, 'warning')
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from detectors.rules import calibrated, static
from detectors.rules.episodes import Episode, episodes
from detectors.rules.series import GroupSeries, Labels, MetricSeries, WindowValues, window_values
from detectors.rules.spec import CalibratedCondition, RuleSpec, StaticCondition, step_seconds
from detectors.rules.static import CRITICAL, WARNING


@dataclass(frozen=True)
class GroupEvaluation:
    """One group at each step: the window's value and size, its level and the level that
    fired (held long enough), the bounds it was compared with, and its episodes."""

    labels: Labels
    times: np.ndarray  # epoch seconds at which each step's window ends
    values: np.ndarray
    weight: np.ndarray
    levels: np.ndarray
    fired: np.ndarray
    warning: np.ndarray  # per step; NaN where there is none
    critical: np.ndarray
    # Calibrated rules: the reference's value, the value at which the test fires, p-values.
    baseline: np.ndarray | None = None
    bound: np.ndarray | None = None
    p_values: np.ndarray | None = None
    episodes: list[Episode] = field(default_factory=list)

    @property
    def name(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.labels) or "all"


@dataclass(frozen=True)
class RuleEvaluation:
    spec: RuleSpec
    interval_seconds: int
    groups: tuple[GroupEvaluation, ...]
    groups_dropped: int = 0


def steps(n_buckets: int, *, window_buckets: int, step_buckets: int) -> np.ndarray:
    """Indices of the buckets each step's window ends on: the last bucket, and back by
    ``step_buckets`` while a whole window fits."""
    last = n_buckets - 1
    if last < window_buckets - 1:
        return np.empty(0, dtype=np.int64)
    return np.arange(last, window_buckets - 2, -step_buckets)[::-1]


def evaluate(
    spec: RuleSpec, series: MetricSeries, *, interval_seconds: int, auto_resolve_after: int,
    since: int | None = None,
) -> RuleEvaluation:  # fmt: skip
    """Every group at every step; steps before epoch ``since`` only feed what later steps
    need (the ``for`` run-up, a calibrated reference) and are left out of the result."""
    interval_seconds = step_seconds(interval_seconds)
    step_buckets = interval_seconds // series.bucket_seconds
    idx = steps(series.n_buckets, window_buckets=spec.window_buckets, step_buckets=step_buckets)
    times = np.array([series.bucket_end(int(i)) for i in idx], dtype=np.int64)
    keep = times >= since if since is not None else np.ones(times.size, dtype=bool)
    out = []
    for g in series.groups:
        wv = window_values(series, g, kind=spec.kind, window_buckets=spec.window_buckets,
                           quantile=spec.quantile)  # fmt: skip
        cond = spec.condition
        if isinstance(cond, StaticCondition):
            ge = _static(cond, wv, idx, times, interval_seconds)
            worse: str = cond.op
        else:
            ge = _calibrated(spec, cond, series, g, wv, idx, times, interval_seconds,
                             n_groups=len(series.groups))  # fmt: skip
            worse = {"up": "above", "down": "below"}.get(cond.direction, "both")
        ge = _only(ge, keep)
        eps = episodes(ge.times, ge.fired, ge.levels, ge.values, auto_resolve_after=auto_resolve_after,
                       worse=worse)  # fmt: skip
        out.append(GroupEvaluation(**{**ge.__dict__, "labels": g.labels, "episodes": eps}))
    return RuleEvaluation(spec, interval_seconds, tuple(out), series.groups_dropped)


def _static(
    cond: StaticCondition, wv: WindowValues, idx: np.ndarray, times: np.ndarray,
    interval_seconds: int,
) -> GroupEvaluation:  # fmt: skip
    values = wv.values[idx]
    lv = static.levels(values, cond)
    fired = static.held(lv, static.points_for(cond.for_seconds, interval_seconds))
    bound = [np.nan if b is None else b for b in (cond.warning, cond.critical)]
    return GroupEvaluation((), times, values, wv.weight[idx], lv, fired,
                           np.full(times.size, bound[0]), np.full(times.size, bound[1]))  # fmt: skip


def _calibrated(
    spec: RuleSpec, cond: CalibratedCondition, series: MetricSeries, g: GroupSeries,
    wv: WindowValues, idx: np.ndarray, times: np.ndarray, interval_seconds: int, *, n_groups: int,
) -> GroupEvaluation:  # fmt: skip
    found = calibrated.test_steps(spec, cond, series, g, wv, idx,
                                  interval_seconds=interval_seconds, n_groups=n_groups)  # fmt: skip
    top = CRITICAL if cond.severity == "critical" else WARNING
    lv = np.where(np.isnan(found.values), static.NO_DATA, found.levels)
    lv = static.resolve_no_data(lv, cond.no_data, top=top)
    fired = static.held(lv, static.points_for(cond.for_seconds, interval_seconds))
    nan = np.full(times.size, np.nan)
    return GroupEvaluation((), times, found.values, found.weight, lv, fired, nan, nan,
                           found.baseline, found.bound, found.p_values)  # fmt: skip


def _only(ge: GroupEvaluation, keep: np.ndarray) -> GroupEvaluation:
    if keep.all():
        return ge
    cut = {k: (v[keep] if isinstance(v, np.ndarray) else v) for k, v in ge.__dict__.items()}
    return GroupEvaluation(**cut)
