"""A rule's metric read from the rollups: one :class:`~detectors.rules.series.MetricSeries`.

Each metric is served by one rollup table (:data:`SOURCES`): the user rollup when the rule
filters or groups by user, the tool rollup for tool metrics (and latency of a tool), the
model rollup for tokens and cost of a model, the score rollup for score metrics, else the
trace rollup. Counts are summed in SQL per bucket and group; latency sketches are read
per row and added into dense matrices (:func:`detectors.rules.sketch.accumulate`). A
grouped rule keeps its :data:`~detectors.rules.spec.MAX_GROUPS` busiest groups.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import ModelRollup, ScoreRollup, ToolRollup, TraceRollup, UserRollup
from app.rollups.buckets import BUCKET_SECONDS
from detectors.rules import sketch
from detectors.rules.series import GroupSeries, MetricSeries
from detectors.rules.spec import MAX_GROUPS, RuleSpec


@dataclass(frozen=True)
class Source:
    """Where a metric is read: the table and its numerator, denominator and squares
    columns (None: not a ratio / no mean test), or its latency sketch column."""

    table: Any
    numerator: str | None
    denominator: str | None = None
    squares: str | None = None
    sketch: bool = False


_DIMENSION_COLUMN = {"agent": "agent", "agent_version": "agent_version",
                     "environment": "environment", "tool": "tool", "model": "model",
                     "user": "user_id", "score_name": "name"}  # fmt: skip


def source(spec: RuleSpec) -> Source:
    """The table and columns that serve the rule's metric under its filter and groups."""
    used = set(spec.filter.given()) | set(spec.group_by)
    m = spec.metric
    if "user" in used:
        table: Any = UserRollup
    elif m == "tool_error_rate" or (m.startswith("latency") and "tool" in used):
        table = ToolRollup
    elif m in ("tokens", "cost", "cost_per_hour") and "model" in used:
        table = ModelRollup
    elif m.startswith("score"):
        table = ScoreRollup
    else:
        table = TraceRollup
    if m.startswith("latency"):
        return Source(table, None, sketch=True)
    per_trace = "calls" if table is ModelRollup else "traces"
    columns: dict[str, tuple[str, str | None, str | None]] = {
        "trace_count": ("traces", None, None),
        "trace_error_rate": ("error_traces", "traces", None),
        "tool_error_rate": ("errors", "calls", None),
        "tokens": ("tokens", None, None),
        "tokens_per_trace": ("tokens", per_trace, "tokens_sq"),
        "cost": ("cost", None, None),
        "cost_per_hour": ("cost", None, None),
        "cost_per_trace": ("cost", per_trace, "cost_sq"),
        "score_mean": ("total", "scores", "total_sq"),
        "score_pass_rate": ("passed", "scores", None),
        "label_coverage": ("labeled_traces", "traces", None),
        "loop_rate": ("loop_traces", "traces", None),
    }
    return Source(table, *columns[m])


def read_series(
    session: Session, *, project_id: int, spec: RuleSpec, start: int, end: int
) -> MetricSeries:
    """The rule's series over buckets ``[start, end)`` (epoch seconds, whole buckets)."""
    src = source(spec)
    t = src.table
    n = max(0, (end - start) // BUCKET_SECONDS)
    group_cols = [getattr(t, _DIMENSION_COLUMN[d]) for d in spec.group_by]
    where = [t.project_id == project_id, t.bucket >= start, t.bucket < end]
    where += [getattr(t, _DIMENSION_COLUMN[d]) == v for d, v in spec.filter.given().items()]
    if src.sketch:
        q = select(t.bucket, *group_cols, t.latency_sketch).where(*where, t.latency_sketch != b"")
        rows = list(session.execute(q).all())
        return _sketch_series(rows, start=start, n=n, spec=spec)
    sums = [func.sum(getattr(t, c)) for c in (src.numerator, src.denominator, src.squares) if c]
    rows = list(session.execute(select(t.bucket, *group_cols, *sums).where(*where)
                                .group_by(t.bucket, *group_cols)).all())  # fmt: skip
    return _count_series(rows, start=start, n=n, spec=spec, src=src)


def _labels(spec: RuleSpec, values: tuple[Any, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((d, str(v)) for d, v in zip(spec.group_by, values, strict=True))


def _busiest(weights: dict[tuple[Any, ...], float]) -> tuple[list[tuple[Any, ...]], int]:
    keys = sorted(weights, key=lambda k: (-weights[k], k))
    return sorted(keys[:MAX_GROUPS]), max(0, len(keys) - MAX_GROUPS)


def _count_series(
    rows: list[Any], *, start: int, n: int, spec: RuleSpec, src: Source
) -> MetricSeries:
    g = len(spec.group_by)
    width = 1 + (src.denominator is not None) + (src.squares is not None)
    data: dict[tuple[Any, ...], np.ndarray] = {}
    for r in rows:
        key = tuple(r[1 : 1 + g])
        arr = data.get(key)
        if arr is None:
            arr = data[key] = np.zeros((width, n))
        i = (int(r[0]) - start) // BUCKET_SECONDS
        arr[:, i] = [float(v or 0.0) for v in r[1 + g :]]
    if not data and not spec.group_by:
        data[()] = np.zeros((width, n))  # an ungrouped rule watches its traffic even at none
    weights = {k: float(a[1 if src.denominator else 0].sum()) for k, a in data.items()}
    keep, dropped = _busiest(weights)
    groups = []
    for k in keep:
        a = data[k]
        den = a[1] if src.denominator is not None else None
        sq = a[-1] if src.squares is not None else None
        groups.append(GroupSeries(_labels(spec, k), a[0], den, sq))
    return MetricSeries(start, tuple(groups), groups_dropped=dropped)


def _sketch_series(rows: list[Any], *, start: int, n: int, spec: RuleSpec) -> MetricSeries:
    g = len(spec.group_by)
    by_group: dict[tuple[Any, ...], tuple[list[int], list[bytes]]] = {}
    for r in rows:
        at, blobs = by_group.setdefault(tuple(r[1 : 1 + g]), ([], []))
        at.append((int(r[0]) - start) // BUCKET_SECONDS)
        blobs.append(bytes(r[-1]))
    if not by_group and not spec.group_by:
        by_group[()] = ([], [])
    weights = {k: float(len(v[0])) for k, v in by_group.items()}
    keep, dropped = _busiest(weights)
    dense = {k: sketch.accumulate(by_group[k][1], rows=by_group[k][0], n_rows=n) for k in keep}
    lo = min((first for first, d in dense.values() if d.shape[1]), default=0)
    groups = []
    for k in keep:
        first, counts = dense[k]
        groups.append(GroupSeries(_labels(spec, k), counts.sum(axis=1).astype(np.float64),
                                  sketch=_shift(counts, first, lo)))  # fmt: skip
    return MetricSeries(start, tuple(groups), key_lo=lo, groups_dropped=dropped)


def _shift(dense: np.ndarray, first: int, lo: int) -> np.ndarray:
    """``dense`` (keys from ``first``) with columns from key ``lo`` instead."""
    if dense.shape[1] == 0 or first == lo:
        return dense
    return np.pad(dense, ((0, 0), (first - lo, 0)))
