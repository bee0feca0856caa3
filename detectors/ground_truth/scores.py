"""What FM-4's label-free estimate calibrates: each trace's confidence where enough labeled
traces carry one, else the score of an outcome model fitted on trace features
(:mod:`detectors.ground_truth.trace_features`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from detectors.ground_truth.calibration import labels_and_confidences
from detectors.ground_truth.label_coverage import visible_label
from detectors.ground_truth.trace_features import OutcomeModel
from detectors.records import TraceRecord


def calibration_scores(
    ref: Sequence[TraceRecord],
    cur: Sequence[TraceRecord],
    now: float,
    ev: dict[str, Any],
    *,
    min_labeled: int,
    trace_features: bool,
    seed: int,
) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | str:
    """What the estimate calibrates: the traces' confidence where enough labeled traces
    carry one, else the outcome model's score from trace features. Returns
    ``(estimator, ref labels, ref scores, cur labels, cur labeled scores, cur unlabeled
    scores)`` or why not."""
    ref_y, ref_c = labels_and_confidences(ref, now)
    cur_y, cur_lc = labels_and_confidences(cur, now)
    unlabeled = [t for t in cur if visible_label(t, now) is None]
    if ref_y.size < min_labeled:
        return f"{ref_y.size} labeled reference traces (< {min_labeled})"
    x = np.concatenate([ref_c, cur_lc])
    y = np.concatenate([ref_y, cur_y])
    has_conf = np.isfinite(x)
    if has_conf.sum() >= min_labeled and np.ptp(x[has_conf]) > 0 and np.ptp(y[has_conf]) > 0:
        uc = np.array([t.confidence for t in unlabeled if t.confidence is not None], float)
        uc = uc[np.isfinite(uc)]
        ev["n_current_without_confidence"] = int(len(unlabeled) - uc.size)
        return "confidence", ref_y, ref_c, cur_y, cur_lc, uc
    if not trace_features:
        return (
            f"{int(has_conf.sum())} labeled traces with a confidence (< {min_labeled})"
            " and the trace-feature estimate is off"
        )
    ref_labeled = [t for t in ref if visible_label(t, now) is not None]
    if np.ptp(ref_y) == 0:
        return "every labeled reference trace has the same label: nothing to learn from"
    cur_labeled = [t for t in cur if visible_label(t, now) is not None]
    model = OutcomeModel(seed=seed)
    ref_scores = model.fit_out_of_fold(ref_labeled, ref_y)
    if not model.informative:
        return "no confidence, and the trace features do not vary: nothing to estimate from"
    ev["outcome_model_weights"] = model.weights()
    ev["n_current_without_confidence"] = 0
    cur_lc = model.score(cur_labeled)
    return "trace_features", ref_y, ref_scores, cur_y, cur_lc, model.score(unlabeled)
