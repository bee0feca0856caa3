"""FM-4 long-horizon ground-truth absence: label coverage, label delay, label-free accuracy.

When outcomes arrive days after the decision, error rates on labeled traffic say little
about today's traffic. This detector reports how much of the current window is labeled
(per cohort) and estimates the current accuracy without waiting for the labels.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from sklearn.isotonic import IsotonicRegression, isotonic_regression

from detectors.records import DetectorResult, Score, TraceRecord
from detectors.significance import check_integers_at_least

try:  # the PAVA kernel behind IsotonicRegression, without its per-call validation (10x faster)
    from sklearn._isotonic import _inplace_contiguous_isotonic_regression
except ImportError:  # pragma: no cover - private API; fall back to the public function
    _inplace_contiguous_isotonic_regression = None

FAILURE_MODE = "FM-4"


def _pava(y: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Weighted isotonic (non-decreasing) fit of ``y`` in the given order."""
    if _inplace_contiguous_isotonic_regression is None:
        return np.asarray(isotonic_regression(y, sample_weight=weight))
    fit = np.ascontiguousarray(y, dtype=np.float64).copy()
    _inplace_contiguous_isotonic_regression(fit, np.ascontiguousarray(weight, np.float64).copy())
    return fit


def visible_label(trace: TraceRecord, now: float) -> Score | None:
    """The latest ground-truth label that had arrived by ``now`` (``created_at <= now``)."""
    labels = [s for s in trace.scores if s.is_label and s.created_at <= now]
    return max(labels, key=lambda s: s.created_at) if labels else None


def label_coverage(traces: Sequence[TraceRecord], now: float) -> list[dict[str, Any]]:
    """Per cohort (agent, agent_version, task_type): traces, labeled fraction and label delay.

    Label delay is ``label.created_at - trace.ended_at`` (seconds, clipped at 0) over the
    labels visible at ``now``; ``pending_age_median_s`` is the median ``now - ended_at`` of the
    traces still waiting for a label.
    """
    cohorts: dict[tuple[str, str, str], list[TraceRecord]] = defaultdict(list)
    for t in traces:
        cohorts[(t.agent, t.agent_version, t.task_type)].append(t)
    rows = []
    for (agent, version, task_type), members in sorted(cohorts.items()):
        delays, pending = [], []
        for t in members:
            label = visible_label(t, now)
            if label is None:
                pending.append(max(0.0, now - t.ended_at))
            elif label.created_at > 0:  # created_at 0.0 means "time unknown"
                delays.append(max(0.0, label.created_at - t.ended_at))
        n_labeled = len(members) - len(pending)
        rows.append(
            {
                "agent": agent,
                "agent_version": version,
                "task_type": task_type,
                "n_traces": len(members),
                "n_labeled": n_labeled,
                "coverage": n_labeled / len(members),
                "label_delay_median_s": float(np.median(delays)) if delays else None,
                "label_delay_p90_s": float(np.quantile(delays, 0.9)) if delays else None,
                "pending_age_median_s": float(np.median(pending)) if pending else None,
            }
        )
    return rows


class GroundTruthAbsenceDetector:
    r"""Label coverage per cohort and a CBPE-style label-free accuracy estimate.

    Only ``source == "production"`` traces are used. A label is a ``true`` score from a
    ``delayed`` or ``human`` source, visible only once ``created_at <= now``; ``now``
    defaults to the latest ``ended_at`` in the current window.

    Statistic: the estimated accuracy drop :math:`\hat d = a_{ref} - \hat a_{cur}`, where
    :math:`a_{ref}` is the realised accuracy (mean label) of the reference window and

    .. math:: \hat a_{cur} = \frac{\sum_{i \in L} y_i + \sum_{j \in U} \hat f(c_j)}{|L| + |U|},

    with :math:`L` the labeled and :math:`U` the unlabeled current traces, :math:`c` the
    trace confidence and :math:`\hat f` the isotonic regression of label on confidence
    (``IsotonicRegression(out_of_bounds="clip")``) fitted on every labeled trace of both
    windows (confidence-based performance estimation, CBPE; NannyML, 2022).

    Calibration: a stratified bootstrap (``n_bootstrap`` resamples of the reference labels,
    the current labels and the unlabeled current traces, refitting :math:`\hat f` each time)
    gives the distribution of :math:`\hat d`; ``p_value`` is the bootstrap probability that
    the drop is at most ``min_drop``, and the detector fires when ``p_value <= alpha``, i.e.
    when the one-sided ``1 - alpha`` lower confidence bound of the drop exceeds ``min_drop``.
    On stationary data the drop is centred on 0, so the false-alarm rate is well below alpha;
    ``min_drop`` keeps huge windows from firing on trivia.

    Coverage below ``min_coverage`` (overall, or in any cohort of at least
    ``min_cohort_size`` traces) sets ``evidence["needs_labels"]`` and lists the cohorts in
    ``evidence["cohorts_needing_labels"]``; it never fires by itself (the engine turns it
    into labeling work). It is reported on insufficient-data results too.

    Parameters
    ----------
    alpha : float, default 0.01
        One-sided false-alarm rate of the drop test.
    min_drop : float, default 0.05
        Smallest accuracy drop (absolute) worth an alert.
    min_coverage : float, default 0.2
        Label coverage below which labels are requested.
    min_labeled : int, default 30
        Fewest labeled reference traces, and fewest labeled traces with a confidence to
        calibrate on; fewer gives ``insufficient_data``.
    min_current : int, default 20
        Fewest current traces with a label or a confidence.
    min_cohort_size : int, default 10
        Cohorts smaller than this are reported but never request labels on their own.
    n_bootstrap : int, default 1000
    seed : int, default 0

    Examples
    --------
    >>> import numpy as np
    >>> from detectors.records import Score, TraceRecord
    >>> rng = np.random.default_rng(0)
    >>> def window(start, n, conf_mean, label_share):
    ...     out = []
    ...     for i in range(n):
    ...         c = float(np.clip(rng.normal(conf_mean, 0.1), 0.01, 0.99))
    ...         end = start + i
    ...         scores = ()
    ...         if rng.random() < label_share:
    ...             y = float(rng.random() < c)
    ...             scores = (Score("correct", y, "true", "delayed", end + 60.0),)
    ...         out.append(TraceRecord(f"t{start + i}", "bot", "v1", end - 5, end,
    ...                                attributes={"confidence": c}, scores=scores))
    ...     return out
    >>> det = GroundTruthAbsenceDetector()
    >>> res = det.test(window(0, 400, 0.85, 0.8), window(10_000, 300, 0.65, 0.1))
    >>> bool(res.fired), res.evidence["needs_labels"], round(res.statistic, 1)
    (True, True, 0.2)
    """

    needs: ClassVar[tuple[str, ...]] = ("true_scores", "confidence")

    def __init__(
        self,
        *,
        alpha: float = 0.01,
        min_drop: float = 0.05,
        min_coverage: float = 0.2,
        min_labeled: int = 30,
        min_current: int = 20,
        min_cohort_size: int = 10,
        n_bootstrap: int = 1000,
        seed: int = 0,
    ) -> None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        if not 0.0 <= min_drop < 1.0:
            raise ValueError(f"min_drop must be in [0, 1), got {min_drop!r}")
        if not 0.0 <= min_coverage <= 1.0:
            raise ValueError(f"min_coverage must be in [0, 1], got {min_coverage!r}")
        check_integers_at_least(
            ("min_labeled", min_labeled, 2),
            ("min_current", min_current, 1),
            ("min_cohort_size", min_cohort_size, 1),
            ("n_bootstrap", n_bootstrap, 100),
        )
        self.alpha = float(alpha)
        self.min_drop = float(min_drop)
        self.min_coverage = float(min_coverage)
        self.min_labeled = int(min_labeled)
        self.min_current = int(min_current)
        self.min_cohort_size = int(min_cohort_size)
        self.n_bootstrap = int(n_bootstrap)
        self.seed = int(seed)

    def test(
        self,
        reference: Sequence[TraceRecord],
        current: Sequence[TraceRecord],
        *,
        now: float | None = None,
    ) -> DetectorResult:
        cur = [t for t in current if t.source == "production"]
        ref = [t for t in reference if t.source == "production"]
        if not cur:
            return DetectorResult.insufficient(
                FAILURE_MODE,
                "no production traces in the current window",
                needs_labels=False,
                cohorts_needing_labels=[],
            )
        now = float(max(t.ended_at for t in cur)) if now is None else float(now)
        coverage = self._coverage_evidence(cur, now)

        def insufficient(reason: str) -> DetectorResult:
            return DetectorResult.insufficient(FAILURE_MODE, reason, **coverage)

        ref_y, ref_c = _labels_and_confidences(ref, now)
        cur_y, cur_lc = _labels_and_confidences(cur, now)
        unlabeled = [t for t in cur if visible_label(t, now) is None]
        cur_uc = np.array([t.confidence for t in unlabeled if t.confidence is not None], float)
        cur_uc = cur_uc[np.isfinite(cur_uc)]
        if ref_y.size < self.min_labeled:
            return insufficient(f"{ref_y.size} labeled reference traces (< {self.min_labeled})")
        x = np.concatenate([ref_c, cur_lc])
        y = np.concatenate([ref_y, cur_y])
        has_conf = np.isfinite(x)
        if has_conf.sum() < self.min_labeled:
            return insufficient(
                f"{int(has_conf.sum())} labeled traces with a confidence (< {self.min_labeled})"
            )
        if np.ptp(x[has_conf]) == 0 or np.ptp(y[has_conf]) == 0:
            return insufficient("labels or confidences are constant: nothing to calibrate")
        if cur_y.size + cur_uc.size < self.min_current:
            return insufficient(
                f"{cur_y.size + cur_uc.size} current traces with a label or a confidence "
                f"(< {self.min_current})"
            )

        calibrator = IsotonicRegression(out_of_bounds="clip").fit(x[has_conf], y[has_conf])
        expected = calibrator.predict(cur_uc) if cur_uc.size else np.empty(0)
        ref_acc = float(ref_y.mean())
        est_acc = float((cur_y.sum() + expected.sum()) / (cur_y.size + cur_uc.size))
        drops, ests = self._bootstrap(ref_y, ref_c, cur_y, cur_lc, cur_uc)
        drop = ref_acc - est_acc
        p_value = float((1 + np.sum(drops <= self.min_drop)) / (self.n_bootstrap + 1))
        fired = p_value <= self.alpha
        lo, hi = np.quantile(ests, [self.alpha, 1.0 - self.alpha])
        evidence = {
            **coverage,
            "reference_accuracy": ref_acc,
            "estimated_accuracy": est_acc,
            "estimated_accuracy_interval": [float(lo), float(hi)],
            "interval_level": 1.0 - 2.0 * self.alpha,
            "estimated_accuracy_unlabeled": float(expected.mean()) if expected.size else None,
            "realised_accuracy_labeled_current": float(cur_y.mean()) if cur_y.size else None,
            "drop_lower_bound": float(np.quantile(drops, self.alpha)),
            "n_calibration": int(has_conf.sum()),
            "n_reference_labeled": int(ref_y.size),
            "n_current_labeled": int(cur_y.size),
            "n_current_unlabeled_estimated": int(cur_uc.size),
            "n_current_without_confidence": int(len(unlabeled) - cur_uc.size),
            "now": now,
        }
        if fired:
            evidence["summary"] = (
                f"estimated accuracy {est_acc:.3f} (interval {lo:.3f}-{hi:.3f}) vs "
                f"{ref_acc:.3f} in the reference window: drop {drop:.3f}"
            )
        return DetectorResult(
            failure_mode=FAILURE_MODE,
            statistic=float(drop),
            threshold=self.min_drop,
            p_value=p_value,
            fired=bool(fired),
            evidence=evidence,
        )

    def _coverage_evidence(self, cur: Sequence[TraceRecord], now: float) -> dict[str, Any]:
        cohorts = label_coverage(cur, now)
        n_labeled = sum(c["n_labeled"] for c in cohorts)
        overall = n_labeled / len(cur)
        needing = [
            {k: c[k] for k in ("agent", "agent_version", "task_type", "n_traces", "coverage")}
            for c in cohorts
            if c["n_traces"] >= self.min_cohort_size and c["coverage"] < self.min_coverage
        ]
        return {
            "label_coverage": overall,
            "needs_labels": bool(overall < self.min_coverage or needing),
            "cohorts_needing_labels": needing,
            "cohorts": cohorts,
        }

    def _bootstrap(
        self,
        ref_y: np.ndarray,
        ref_c: np.ndarray,
        cur_y: np.ndarray,
        cur_lc: np.ndarray,
        cur_uc: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Stratified bootstrap of (drop, estimated accuracy), refitting the calibration.

        Each resample becomes integer weights on the distinct confidence values, so a refit is
        one call to the PAVA kernel that ``IsotonicRegression`` itself uses; ``np.interp``
        clips outside the fitted range exactly like ``out_of_bounds="clip"``.
        """
        rng = np.random.default_rng(self.seed)
        x = np.concatenate([ref_c, cur_lc])
        y = np.concatenate([ref_y, cur_y])
        conf = np.isfinite(x)
        ux, inverse = np.unique(x[conf], return_inverse=True)
        slot = np.full(x.size, -1)
        slot[conf] = inverse
        n_r, n_l, n_u = ref_y.size, cur_y.size, cur_uc.size
        drops = np.empty(self.n_bootstrap)
        ests = np.empty(self.n_bootstrap)
        for b in range(self.n_bootstrap):
            ref_pick = rng.integers(0, n_r, n_r)
            cur_pick = rng.integers(0, n_l, n_l)
            pick = np.concatenate([ref_pick, n_r + cur_pick])
            pick = pick[slot[pick] >= 0]
            weight = np.bincount(slot[pick], minlength=ux.size).astype(float)
            total = np.bincount(slot[pick], weights=y[pick], minlength=ux.size)
            keep = weight > 0
            fit = _pava(total[keep] / weight[keep], weight[keep])
            estimated = np.interp(cur_uc[rng.integers(0, n_u, n_u)], ux[keep], fit).sum()
            ests[b] = (cur_y[cur_pick].sum() + estimated) / (n_l + n_u)
            drops[b] = ref_y[ref_pick].mean() - ests[b]
        return drops, ests


def _labels_and_confidences(
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
