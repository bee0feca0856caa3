"""A rule as a monitor's detector: the last step of its series, one verdict per group.

The monitor run calls ``test(reference, current, now=...)`` as it calls every detector;
``current`` is the rule's :class:`~detectors.rules.series.MetricSeries`, loaded from the
rollups so that it ends on the run's step and reaches back as far as the step needs
(:func:`lookback_buckets`); ``reference`` is unused. The result fires when a group fires;
its evidence carries every group's verdict, which the service turns into one alert per
group (``alerts_per_group``), the group's values in the alert's labels.

>>> from detectors.rules.series import GroupSeries, MetricSeries
>>> det = RuleDetector.from_params({"rule": {"metric": "trace_count", "window_seconds": 300,
...     "condition": {"type": "static", "op": "below", "critical": 1}}, "interval_seconds": 300})
>>> lookback_buckets(det.spec, 300)
1
>>> s = MetricSeries(0, (GroupSeries((("agent", "a"),), np.array([0.0])),
...                      GroupSeries((("agent", "b"),), np.array([4.0]))))
>>> r = det.test((), s)
>>> r.fired, [(g["labels"], g["fired"]) for g in r.evidence["groups"]]
(True, [({'agent': 'a'}, 'critical'), ({'agent': 'b'}, None)])
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from pydantic import ValidationError

from detectors.params import DetectorParameterError
from detectors.result import DetectorResult
from detectors.rules import static
from detectors.rules.calibrated import alpha_per_step
from detectors.rules.evaluate import GroupEvaluation, evaluate
from detectors.rules.series import MetricSeries
from detectors.rules.spec import (
    BUCKET_SECONDS,
    METRICS,
    CalibratedCondition,
    Condition,
    RuleSpec,
    step_seconds,
)
from detectors.rules.wording import sentence

MODE = "RULE"
KEEP_BUCKETS = 86400 // BUCKET_SECONDS
_LEVEL = {static.OK: "ok", static.WARNING: "warning", static.CRITICAL: "critical"}


def lookback_buckets(spec: RuleSpec, interval_seconds: int) -> int:
    """Buckets a run reads: its window, the steps its ``for`` looks back over (for
    ``keep``, a day more: a gap keeps the level before it, up to a day back), and for a
    calibrated rule the reference before its earliest window."""
    cond = spec.condition
    step = step_seconds(interval_seconds)
    back = (static.points_for(cond.for_seconds, step) - 1) * (step // BUCKET_SECONDS)
    if cond.no_data == "keep":
        back += KEEP_BUCKETS
    if isinstance(cond, CalibratedCondition):
        back += cond.reference_seconds // BUCKET_SECONDS
    return spec.window_buckets + back


class RuleDetector:
    """A team's rule, evaluated at one step (see the module's notes)."""

    needs = ("rollups",)
    window_counts: tuple[str, ...] = ()
    checks_silence = False
    alerts_per_group = True

    def __init__(self, spec: RuleSpec, *, interval_seconds: int = BUCKET_SECONDS) -> None:
        # Steps are whole buckets; a monitor run more often re-reads its latest step.
        if interval_seconds <= 0:
            raise DetectorParameterError(
                f"interval_seconds must be > 0, got {interval_seconds!r}",
                parameter="interval_seconds",
            )
        self.spec, self.interval_seconds = spec, interval_seconds

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> RuleDetector:
        """From a monitor's parameters: ``rule`` (the spec) and ``interval_seconds``."""
        unknown = sorted(set(params) - {"rule", "interval_seconds"})
        if unknown:
            raise DetectorParameterError(f"unknown parameter {unknown[0]!r} for RULE",
                                         parameter=unknown[0])  # fmt: skip
        try:
            spec = RuleSpec.model_validate(params.get("rule"))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in ("rule", *first["loc"]))
            raise DetectorParameterError(f"{where}: {first['msg']}", parameter=where) from None
        return cls(spec, interval_seconds=int(params.get("interval_seconds", BUCKET_SECONDS)))

    def test(
        self, reference: Any, current: MetricSeries, *, now: float | None = None
    ) -> DetectorResult:
        metric = METRICS[self.spec.metric]
        evaluated = evaluate(self.spec, current, interval_seconds=self.interval_seconds,
                             auto_resolve_after=1)  # fmt: skip
        cond = self.spec.condition
        base = {"metric": self.spec.metric, "label": metric.label, "unit": metric.unit,
                "window_seconds": self.spec.window_seconds,
                "groups_dropped": evaluated.groups_dropped, "no_data_mode": cond.no_data,
                "no_data_severity": _top(cond)}  # fmt: skip
        if isinstance(cond, CalibratedCondition):
            base["calibrated"] = {
                "direction": cond.direction, "reference_seconds": cond.reference_seconds,
                "expected_days_between_false_alerts": cond.expected_days_between_false_alerts,
                "alpha": alpha_per_step(cond, interval_seconds=self.interval_seconds,
                                        n_groups=len(evaluated.groups)),
                "min_relative_change": cond.min_relative_change,
            }  # fmt: skip
        if evaluated.groups and evaluated.groups[0].times.size == 0:
            return DetectorResult.insufficient(MODE, "the series is shorter than the window",
                                               **base)  # fmt: skip
        # A grouped rule with no group left has no verdict to give a group; the service
        # applies the no-data mode to the groups whose alerts are open.
        groups = [_verdict(g, self.spec, base) for g in evaluated.groups]
        if not groups:
            return DetectorResult(MODE, float("nan"), float("nan"), None, False,
                                  {**base, "groups": []})  # fmt: skip
        fired = [g for g in groups if g["fired"]]
        worst = max(fired or groups, key=lambda g: (g["fired_level"], g["level_n"]))
        return DetectorResult(
            MODE, statistic=_num(worst["value"]), threshold=_num(worst["threshold"]),
            p_value=worst.get("p_value"), fired=bool(fired), evidence={**base, "groups": groups},
        )  # fmt: skip


def _top(cond: Condition) -> str:
    """The severity an alerting no-data window fires at: the rule's worst level."""
    if isinstance(cond, CalibratedCondition):
        return cond.severity
    return "critical" if cond.critical is not None else "warning"


def _verdict(g: GroupEvaluation, spec: RuleSpec, base: dict[str, Any]) -> dict[str, Any]:
    """The last step of one group, as the run's evidence and the group's alert read it:
    ``fired`` (the level held for ``for``, or None), ``pending`` (at a level not held long
    enough), ``clean`` (below every level: counts towards resolving) and its sentence."""
    value = float(g.values[-1])
    level, fired = int(g.levels[-1]), int(g.fired[-1])
    shown = fired if fired > 0 else max(level, 0)
    out = {
        "labels": dict(g.labels),
        "value": None if math.isnan(value) else value,
        "n": float(g.weight[-1]),
        "no_data": bool(math.isnan(value)),
        "level": _LEVEL[max(level, 0)],
        "level_n": level,
        "fired": _LEVEL[fired] if fired > 0 else None,
        "fired_level": fired,
        "pending": level > 0 and fired < level,
        "threshold": _threshold(g, spec.condition, shown),
        "at": int(g.times[-1]),
        # Below every level; a group still at its level but not held again (after a dip)
        # keeps its alert open, as the preview's episodes do.
        "clean": level <= 0,
    }
    if g.baseline is not None and g.p_values is not None:
        out["baseline"] = _finite(float(g.baseline[-1]))
        out["p_value"] = _finite(float(g.p_values[-1]))
    out["summary"] = sentence(base, out, condition=spec.condition)
    return out


def _threshold(g: GroupEvaluation, cond: Condition, shown: int) -> float | None:
    if isinstance(cond, CalibratedCondition):
        return _finite(float(g.bound[-1])) if g.bound is not None else None
    return static.threshold_of(shown, cond)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _num(x: Any) -> float:
    return float("nan") if x is None else float(np.float64(x))
