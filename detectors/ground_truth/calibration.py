"""FM-4 calibration: labels vs confidences, isotonic fits, and the bootstrap of the drop.

The label-free accuracy estimate maps a trace's confidence through the isotonic regression
of label on confidence (confidence-based performance estimation, CBPE; NannyML, 2022); the
bootstrap refits it on every resample.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.isotonic import isotonic_regression

from detectors.deadline import checkpoint
from detectors.ground_truth.label_coverage import visible_label
from detectors.records import TraceRecord

try:  # the PAVA kernel behind IsotonicRegression, without its per-call validation (10x faster)
    from sklearn._isotonic import _inplace_contiguous_isotonic_regression
except ImportError:  # pragma: no cover - private API; fall back to the public function
    _inplace_contiguous_isotonic_regression = None


def pava(y: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Weighted isotonic (non-decreasing) fit of ``y`` in the given order."""
    if _inplace_contiguous_isotonic_regression is None:
        return np.asarray(isotonic_regression(y, sample_weight=weight))
    fit = np.ascontiguousarray(y, dtype=np.float64).copy()
    _inplace_contiguous_isotonic_regression(fit, np.ascontiguousarray(weight, np.float64).copy())
    return fit


def labels_and_confidences(
    traces: Sequence[TraceRecord], now: float
) -> tuple[np.ndarray, np.ndarray]:
    """Label values (clipped to [0, 1]) and confidences (NaN when absent) of labeled traces."""
    ys, cs = [], []
    for t in traces:
        label = visible_label(t, now)
        if label is not None:
            ys.append(min(1.0, max(0.0, float(label.value))))
            c = t.confidence
            cs.append(np.nan if c is None else float(c))
    return np.array(ys, float), np.array(cs, float)


def bootstrap_drop(
    ref_y: np.ndarray,
    ref_c: np.ndarray,
    cur_y: np.ndarray,
    cur_lc: np.ndarray,
    cur_uc: np.ndarray,
    *,
    n_bootstrap: int,
    seed: int,
    min_drop: float = 0.0,
    stop_after: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Stratified bootstrap of (drop, estimated accuracy), refitting the calibration.

    With ``stop_after`` it stops at that many resampled drops at most ``min_drop`` (the
    replicates that count against a drop: Besag and Clifford's sequential p-value,
    :mod:`detectors.significance`), and returns the replicates drawn so far.

    Each resample becomes integer weights on the distinct confidence values, so a refit is
    one call to the PAVA kernel that ``IsotonicRegression`` itself uses; ``np.interp``
    clips outside the fitted range exactly like ``out_of_bounds="clip"``.
    """
    rng = np.random.default_rng(seed)
    x = np.concatenate([ref_c, cur_lc])
    y = np.concatenate([ref_y, cur_y])
    conf = np.isfinite(x)
    ux, inverse = np.unique(x[conf], return_inverse=True)
    slot = np.full(x.size, -1)
    slot[conf] = inverse
    n_r, n_l, n_u = ref_y.size, cur_y.size, cur_uc.size
    drops = np.empty(n_bootstrap)
    ests = np.empty(n_bootstrap)
    hits = 0
    for b in range(n_bootstrap):
        if b % 64 == 0:
            checkpoint()
        ref_pick = rng.integers(0, n_r, n_r)
        cur_pick = rng.integers(0, n_l, n_l)
        pick = np.concatenate([ref_pick, n_r + cur_pick])
        pick = pick[slot[pick] >= 0]
        weight = np.bincount(slot[pick], minlength=ux.size).astype(float)
        total = np.bincount(slot[pick], weights=y[pick], minlength=ux.size)
        keep = weight > 0
        fit = pava(total[keep] / weight[keep], weight[keep])
        estimated = np.interp(cur_uc[rng.integers(0, n_u, n_u)], ux[keep], fit).sum()
        ests[b] = (cur_y[cur_pick].sum() + estimated) / (n_l + n_u)
        drops[b] = ref_y[ref_pick].mean() - ests[b]
        if stop_after is not None and drops[b] <= min_drop:
            hits += 1
            if hits >= stop_after:
                return drops[: b + 1], ests[: b + 1]
    return drops, ests
