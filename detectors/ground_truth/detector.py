"""FM-4 :class:`GroundTruthAbsenceDetector`: label coverage and a label-free accuracy drop."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from sklearn.isotonic import IsotonicRegression

from detectors.ground_truth.calibration import bootstrap_drop, labels_and_confidences
from detectors.ground_truth.label_coverage import (
    LabelCounts,
    label_coverage,
    visible_label,
    whole_window_labels,
)
from detectors.records import DetectorResult, TraceRecord
from detectors.significance import SequentialPValue, check_integers_at_least, stop_after_for

FAILURE_MODE = "FM-4"


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
    # Counts read over the whole window where the records are a sample (the service
    # attaches them: detectors.step_profiles.RecordWindow.label_counts).
    window_counts: ClassVar[tuple[str, ...]] = ("labels",)

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
        coverage = self._coverage_evidence(cur, now, whole_window_labels(current))

        def insufficient(reason: str) -> DetectorResult:
            return DetectorResult.insufficient(FAILURE_MODE, reason, **coverage)

        ref_y, ref_c = labels_and_confidences(ref, now)
        cur_y, cur_lc = labels_and_confidences(cur, now)
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
        resampling = SequentialPValue(
            n=self.n_bootstrap, stop_after=stop_after_for(self.alpha, self.n_bootstrap)
        )
        drops, ests = bootstrap_drop(
            ref_y, ref_c, cur_y, cur_lc, cur_uc, n_bootstrap=self.n_bootstrap, seed=self.seed,
            min_drop=self.min_drop, stop_after=resampling.stop_after,
        )  # fmt: skip
        resampling.add(drops <= self.min_drop)
        drop = ref_acc - est_acc
        p_value = float(resampling.p_value)
        fired = p_value <= self.alpha
        lo, hi = np.quantile(ests, [self.alpha, 1.0 - self.alpha])
        evidence = {
            **coverage,
            "reference_accuracy": ref_acc,
            "estimated_accuracy": est_acc,
            "estimated_accuracy_interval": [float(lo), float(hi)],
            "interval_level": 1.0 - 2.0 * self.alpha,
            # The interval is over the replicates drawn: few when the p-value was decided
            # early (no drop in sight), all of them when it matters.
            "resampling": resampling.evidence(),
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

    def _coverage_evidence(
        self, cur: Sequence[TraceRecord], now: float, counts: LabelCounts | None
    ) -> dict[str, Any]:
        """Coverage and delay per cohort: over every trace of the window where the service
        counted them (``counts``; ``cur`` is then a sample), else over ``cur``."""
        cohorts = label_coverage(cur, now, counts=counts)
        n_labeled = sum(c["n_labeled"] for c in cohorts)
        n_traces = sum(c["n_traces"] for c in cohorts)
        overall = n_labeled / n_traces if n_traces else 0.0
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
            "coverage_counted_traces": "whole window" if counts is not None else "records",
        }
