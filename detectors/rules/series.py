"""A rule's metric per bucket, per group, and its value over a sliding window.

The service reads a rule's rollups into a :class:`MetricSeries`: for each group, per bucket,
the metric's numerator (errors, tokens, cost, score total...), its denominator where it is
a ratio (traces, calls, scores), the squares a calibrated mean test needs, or the dense
latency sketch counts (:mod:`detectors.rules.sketch`). :func:`window_values` gives the
window's value at every bucket end with cumulative sums, so evaluating a rule at each of a
month's 8,640 five-minute steps costs a few array passes, not 8,640 queries.

>>> g = GroupSeries((), numerator=np.array([1., 0, 3, 0]),
...                 denominator=np.array([10., 0, 10, 10]))
>>> s = MetricSeries(start=0, groups=(g,))
>>> v = window_values(s, g, kind="ratio", window_buckets=2)
>>> [None if np.isnan(x) else round(float(x), 3) for x in v.values]
[0.1, 0.1, 0.3, 0.15]
>>> v.weight.tolist()
[10.0, 10.0, 10.0, 20.0]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from detectors.rules import sketch
from detectors.rules.spec import BUCKET_SECONDS, Kind

Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class GroupSeries:
    """One group's per-bucket sums (arrays of the series' length)."""

    labels: Labels
    numerator: np.ndarray
    denominator: np.ndarray | None = None
    numerator_sq: np.ndarray | None = None  # sum of squares of the per-item values
    sketch: np.ndarray | None = None  # (buckets, keys) latency counts, from key ``key_lo``

    @property
    def name(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.labels) or "all"


@dataclass(frozen=True)
class MetricSeries:
    """Buckets ``start``, ``start + bucket_seconds``, ... (epoch seconds), per group."""

    start: int
    groups: tuple[GroupSeries, ...]
    key_lo: int = 0
    bucket_seconds: int = BUCKET_SECONDS
    # Groups cut to the busiest MAX_GROUPS: how many more there were.
    groups_dropped: int = field(default=0)

    @property
    def n_buckets(self) -> int:
        return int(self.groups[0].numerator.size) if self.groups else 0

    def bucket_end(self, i: int) -> int:
        """Epoch seconds at which bucket ``i`` ends."""
        return self.start + (i + 1) * self.bucket_seconds

    def __len__(self) -> int:
        """The items (traces, calls, scores) the series counts: a run's window size."""
        total = 0.0
        for g in self.groups:
            if g.sketch is not None:
                total += float(g.sketch.sum())
            elif g.denominator is not None:
                total += float(g.denominator.sum())
        return int(total)


@dataclass(frozen=True)
class WindowValues:
    """The window's value ending at each bucket (NaN: no data) and how many items it
    holds (traces, calls, scores; for counts, the count itself)."""

    values: np.ndarray
    weight: np.ndarray


def rolling(x: np.ndarray, w: int) -> np.ndarray:
    """Sums over the last ``w`` entries along axis 0 (fewer at the start)."""
    c: np.ndarray = np.cumsum(x, axis=0, dtype=np.float64 if x.dtype.kind == "f" else np.int64)
    out = c.copy()
    out[w:] = c[w:] - c[:-w]
    return out


def window_values(s: MetricSeries, g: GroupSeries, *, kind: Kind, window_buckets: int,
                  quantile: float | None = None) -> WindowValues:  # fmt: skip
    """The metric over the ``window_buckets`` ending at every bucket."""
    w = window_buckets
    if kind == "quantile":
        assert g.sketch is not None and quantile is not None
        counts = rolling(g.sketch, w)
        return WindowValues(sketch.quantiles(counts, s.key_lo, quantile), counts.sum(axis=1))
    num = rolling(np.asarray(g.numerator, dtype=np.float64), w)
    if kind == "count":
        return WindowValues(num, num)
    if kind == "per_hour":
        return WindowValues(num / (w * s.bucket_seconds / 3600.0), num)
    assert g.denominator is not None
    den = rolling(np.asarray(g.denominator, dtype=np.float64), w)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return WindowValues(values, den)
