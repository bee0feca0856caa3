"""Preview an unsaved rule: replay it over up to 30 days of rollups, as its runs would have.

The series is read once (:func:`app.rollups.series.read_series`) from the start of the
first step's window (and the steps its ``for`` looks back over) to the last bucket the
rule's evaluation delay says is complete, and evaluated at every step with
:func:`detectors.rules.evaluate.evaluate`, the function every run of the saved rule calls;
the episodes are the alert lifecycle replayed (:mod:`detectors.rules.episodes`). So the
preview shows when the rule would have fired, at which level and for how long.

The answer keeps at most :data:`MAX_POINTS` points per group: a month of 5-minute steps is
8,640, more than a chart is wide; steps are binned and each bin keeps its worst value and
level (a spike is never averaged away). Episodes are computed on every step.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from app.rollups.buckets import BUCKET_SECONDS, floor_epoch
from app.rollups.series import read_series
from app.rules.schemas import PreviewEpisode, PreviewGroup, PreviewOut, PreviewPoint, PreviewRequest
from detectors.rules import static
from detectors.rules.detector import lookback_buckets
from detectors.rules.evaluate import GroupEvaluation, RuleEvaluation, evaluate
from detectors.rules.spec import METRICS, StaticCondition

MAX_POINTS = 720
_LEVEL = {static.OK: "ok", static.WARNING: "warning", static.CRITICAL: "critical"}


def preview(session: Session, *, project_id: int, req: PreviewRequest, now: datetime) -> PreviewOut:
    """The rule replayed over ``req.days`` up to ``now`` (see the module's notes)."""
    started = time.perf_counter()
    spec = req.rule
    end = floor_epoch(now.timestamp() - spec.evaluation_delay_seconds)
    since = end - int(math.ceil(req.days * 86400 / BUCKET_SECONDS)) * BUCKET_SECONDS
    start = since - lookback_buckets(spec, req.interval_seconds) * BUCKET_SECONDS
    series = read_series(session, project_id=project_id, spec=spec, start=start, end=end)
    ev = evaluate(spec, series, interval_seconds=req.interval_seconds,
                  auto_resolve_after=req.auto_resolve_after, since=since)  # fmt: skip
    return _answer(ev, start=since, end=end, started=started)


def _t(epoch: int) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def _answer(ev: RuleEvaluation, *, start: int, end: int, started: float) -> PreviewOut:
    spec, metric = ev.spec, METRICS[ev.spec.metric]
    episodes = [
        PreviewEpisode(group=dict(g.labels), opened_at=_t(e.opened_at),
                       resolved_at=_t(e.resolved_at) if e.resolved_at is not None else None,
                       severity=e.severity, peak_value=_finite(e.peak_value),
                       fired_evaluations=e.fired_evaluations)
        for g in ev.groups for e in g.episodes
    ]  # fmt: skip
    episodes.sort(key=lambda e: (e.opened_at, sorted(e.group.items())))
    cond = spec.condition
    static_rule = isinstance(cond, StaticCondition)
    worse = cond.op if isinstance(cond, StaticCondition) else cond.direction
    groups = [PreviewGroup(labels=dict(g.labels), points=_points(g, worse)) for g in ev.groups]
    return PreviewOut(
        metric=spec.metric, label=metric.label, unit=metric.unit, condition=cond.type,
        start=_t(start), end=_t(end), step_seconds=ev.interval_seconds,
        warning=cond.warning if static_rule else None,  # type: ignore[union-attr]
        critical=cond.critical if static_rule else None,  # type: ignore[union-attr]
        groups=groups, groups_dropped=ev.groups_dropped, episodes=episodes,
        server_ms=(time.perf_counter() - started) * 1000.0,
    )  # fmt: skip


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _points(g: GroupEvaluation, worse: str) -> list[PreviewPoint]:
    n = g.times.size
    if n == 0:
        return []
    per = max(1, math.ceil(n / MAX_POINTS))
    out = []
    for lo in range(0, n, per):
        sl = slice(lo, min(n, lo + per))
        values = g.values[sl]
        seen = values[~np.isnan(values)]
        worst: Any = None
        if seen.size:
            at = int(np.argmax(seen) if worse in ("above", "up") else np.argmin(seen)
                     if worse in ("below", "down") else np.argmax(np.abs(seen)))  # fmt: skip
            worst = float(seen[at])
        fired = int(g.fired[sl].max())
        out.append(PreviewPoint(
            at=_t(int(g.times[sl][-1])), value=worst, n=float(g.weight[sl].max()),
            level=_LEVEL[max(0, int(g.levels[sl].max()))],
            fired=_LEVEL[fired] if fired > 0 else None,
            baseline=_mean(g.baseline, sl), bound=_mean(g.bound, sl),
        ))  # fmt: skip
    return out


def _mean(x: np.ndarray | None, sl: slice) -> float | None:
    """A bin's mean of a per-step line (the calibrated reference and bound), or None."""
    if x is None:
        return None
    part = x[sl]
    part = part[np.isfinite(part)]
    return float(part.mean()) if part.size else None
