"""FM-4 :class:`GroundTruthAbsenceDetector`: label coverage and a label-free accuracy drop."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import stats
from sklearn.isotonic import IsotonicRegression

from detectors.ground_truth.calibration import bootstrap_drop
from detectors.ground_truth.label_coverage import (
    LabelCounts,
    coverage_at_age,
    coverage_evidence,
    earliest_end,
    whole_window_labels,
)
from detectors.ground_truth.scores import calibration_scores
from detectors.outcome_values import recent_half
from detectors.params import MAX_RESAMPLES, Parameters, Seeded, TraceSources, param
from detectors.records import DetectorResult, TraceRecord, TraceWindow
from detectors.significance import (
    SequentialPValue,
    holm_verdict,
    stop_after_for,
    sub_test,
)

FAILURE_MODE = "FM-4"
ESTIMATES = ("estimated_accuracy", "estimated_accuracy_recent")  # whole window, recent half
COVERAGE_FALLS = ("label_coverage_fall", "label_coverage_fall_recent")
# The other scope's figures, kept beside the leading one's in the evidence.
SCOPE_KEYS = ("estimated_accuracy", "estimated_accuracy_interval", "reference_accuracy",
              "n_current_labeled", "n_current_unlabeled_estimated", "estimator")  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class GroundTruthAbsenceDetector(TraceSources, Seeded, Parameters):
    r"""Label coverage per cohort and a CBPE-style label-free accuracy estimate.

    Only the traces of ``sources`` are used: production traffic, the only source allowed,
    since the service counts a sampled window's labels over its production traces
    (eval runs carry their outcome at once; a label delay means nothing there). A label is a ``true`` score from a
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

    Without confidences (tool-calling agents emit none), the score calibrated in their
    place is an outcome model's: a logistic regression of the label on trace features
    (failed and repeated tool calls, steps, duration, decision; fitted on the reference
    window's labeled traces only; :mod:`detectors.ground_truth.trace_features`).
    ``evidence["estimator"]`` says which (``confidence`` or ``trace_features``).

    A second sub-test, **label_coverage_fall**, fires when labels stop arriving: the share
    of traces labeled within the reference's 90th-percentile label delay, among traces at
    least that old, current vs reference (so traces still waiting for a late label do not
    count as unlabeled); Fisher's exact test, one-sided, gated by a fall to
    ``1 - min_coverage_fall`` of the reference share or below. The estimate is also tested
    on the current window's recent half (**estimated_accuracy_recent**): the window must be
    long enough to hold delayed labels, which leaves it half old traffic for hours after a
    fall begins; so is the coverage (**label_coverage_fall_recent**: the later half of the
    traces old enough to judge, gated on the 95% upper bound of its coverage). The sub-tests are Holm-adjusted at ``alpha``; the evidence's estimate is
    the scope with the smaller p (``estimate_scope``), the other's beside it
    (``other_scope``).

    Coverage below ``min_coverage`` (overall, or in any cohort of at least
    ``min_cohort_size`` traces) sets ``evidence["needs_labels"]`` and lists the cohorts in
    ``evidence["cohorts_needing_labels"]``; a low but steady coverage never fires (the
    engine turns it into labeling work). It is reported on insufficient-data results too.

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
    min_coverage_fall : float, default 0.5
        Smallest relative fall of the on-time label share that counts (0.5: halved).
    trace_features : bool, default True
        Estimate from trace features when too few labeled traces carry a confidence.
    seed : int, default 0
    sources : sequence of str, default ("production",)
        Production only (see above); declared so that a monitor's config says so.

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

    needs: ClassVar[tuple[str, ...]] = ("true_scores", "confidence", "steps")
    checks_silence: ClassVar[bool] = False
    # Counts read over the whole window where the records are a sample (the service
    # attaches them: detectors.step_profiles.RecordWindow.label_counts).
    window_counts: ClassVar[tuple[str, ...]] = ("labels",)

    min_drop: float = param(0.05, ge=0.0, lt=1.0)
    min_coverage: float = param(0.2, ge=0.0, le=1.0)
    min_labeled: int = param(30, ge=2)
    min_current: int = param(20, ge=1)
    min_cohort_size: int = param(10, ge=1)
    n_bootstrap: int = param(1000, ge=100, le=MAX_RESAMPLES)
    min_coverage_fall: float = param(0.5, gt=0.0, le=1.0)
    trace_features: bool = param(True)
    # Labels are counted over production traffic (by the service too, over a whole window).
    sources: frozenset[str] = param(("production",), choices=("production",))

    def test(
        self, reference: TraceWindow, current: TraceWindow, *, now: float | None = None
    ) -> DetectorResult:
        ref, cur = self.of_sources(reference), self.of_sources(current)
        if not cur:
            return DetectorResult.insufficient(
                FAILURE_MODE,
                "no production traces in the current window",
                needs_labels=False,
                cohorts_needing_labels=[],
            )
        now = float(max(t.ended_at for t in cur)) if now is None else float(now)
        whole = whole_window_labels(current)
        cur_counts = whole or LabelCounts.of(cur, now)
        ref_counts = whole_window_labels(reference) or LabelCounts.of(ref, now)
        evidence = coverage_evidence(
            cur, now, cur_counts, whole=whole is not None,
            min_cohort_size=self.min_cohort_size, min_coverage=self.min_coverage,
        )  # fmt: skip
        sub_tests: dict[str, dict[str, Any]] = {}
        reasons: list[str] = []
        estimate = self._estimate(ref, cur, now, evidence, reasons)
        if estimate is not None:
            sub_tests["estimated_accuracy"] = sub_test(*estimate)
            # The recent half too (Holm counts it): a window long enough to hold labels
            # is half old traffic for hours after a fall begins.
            recent_ev: dict[str, Any] = {}
            recent = self._estimate(ref, recent_half(cur), now, recent_ev, [])
            if recent is not None:
                sub_tests["estimated_accuracy_recent"] = sub_test(*recent)
                lead = recent[0] < estimate[0]
                evidence["estimate_scope"] = "recent half" if lead else "whole window"
                other = {k: v for k, v in (evidence if lead else recent_ev).items()
                         if k in SCOPE_KEYS}  # fmt: skip
                if lead:
                    evidence.update(recent_ev)
                evidence["other_scope"] = other
        fall = self._coverage_fall(ref_counts, cur_counts, now, evidence, reasons)
        if fall is not None:
            sub_tests["label_coverage_fall"] = sub_test(*fall)
            # The recent half of the traces old enough to judge too (Holm counts it): a
            # stop 3 h into an 8 h window had p = 2e-7 on the whole window but only ~40% of
            # its traces unlabeled, under the gate, so the alert waited 2 h more.
            coverage_ev: dict[str, Any] = {}
            recent_fall = self._coverage_fall(
                ref_counts, cur_counts, now, coverage_ev, [], recent_half=True
            )
            if recent_fall is not None:
                sub_tests["label_coverage_fall_recent"] = sub_test(*recent_fall)
                if recent_fall[0] < fall[0]:
                    evidence["coverage_at_age_whole_window"] = evidence["coverage_at_age"]
                    evidence["coverage_at_age"] = coverage_ev["coverage_at_age"]
        if not sub_tests:
            return DetectorResult.insufficient(FAILURE_MODE, "; ".join(reasons), **evidence)
        verdict = holm_verdict(list(sub_tests.values()), alpha=self.alpha)
        evidence["sub_tests"] = sub_tests
        evidence["now"] = now
        summaries = []
        if any(sub_tests.get(k, {}).get("fired") for k in ESTIMATES):
            lo, hi = evidence["estimated_accuracy_interval"]
            est, ref_acc = evidence["estimated_accuracy"], evidence["reference_accuracy"]
            summaries.append(
                f"estimated accuracy {est:.3f} (interval {lo:.3f}-{hi:.3f}) vs {ref_acc:.3f} "
                f"in the reference window (drop {ref_acc - est:.3f}), on "
                f"{evidence['n_current_labeled']} labels and "
                f"{evidence['n_current_unlabeled_estimated']} traces estimated from "
                f"{evidence['estimator'].replace('_', ' ')}"
                + (
                    " (the window's recent half)"
                    if evidence.get("estimate_scope") == "recent half"
                    else ""
                )
            )
        if any(sub_tests.get(k, {}).get("fired") for k in COVERAGE_FALLS):
            cov = evidence["coverage_at_age"]
            summaries.append(
                f"labels stopped arriving: {cov['current']:.0%} of traces labeled within "
                f"{cov['age_s'] / 3600:.1f} h vs {cov['reference']:.0%} in the reference window"
            )
        if summaries:
            evidence["summary"] = "; ".join(summaries)
        if "estimated_accuracy" in sub_tests:
            statistic = evidence["reference_accuracy"] - evidence["estimated_accuracy"]
            threshold = self.min_drop
        else:
            cov = evidence["coverage_at_age"]
            statistic = 1.0 - cov["current"] / max(cov["reference"], 1e-12)
            threshold = self.min_coverage_fall
        return DetectorResult(
            failure_mode=FAILURE_MODE,
            statistic=float(statistic),
            threshold=float(threshold),
            p_value=verdict.p_value,
            fired=verdict.fired,
            evidence=evidence,
        )

    def _estimate(
        self,
        ref: Sequence[TraceRecord],
        cur: Sequence[TraceRecord],
        now: float,
        ev: dict[str, Any],
        reasons: list[str],
    ) -> tuple[float, bool] | None:
        """The label-free accuracy estimate's drop test (p-value, effect gate), or None."""
        found = calibration_scores(
            ref, cur, now, ev,
            min_labeled=self.min_labeled, trace_features=self.trace_features, seed=self.seed,
        )  # fmt: skip
        if isinstance(found, str):
            reasons.append(found)
            return None
        estimator, ref_y, ref_c, cur_y, cur_lc, cur_uc = found
        if cur_y.size + cur_uc.size < self.min_current:
            reasons.append(
                f"{cur_y.size + cur_uc.size} current traces with a label or a score "
                f"(< {self.min_current})"
            )
            return None
        x = np.concatenate([ref_c, cur_lc])
        y = np.concatenate([ref_y, cur_y])
        has_conf = np.isfinite(x)
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
        lo, hi = np.quantile(ests, [self.alpha, 1.0 - self.alpha])
        ev.update(
            {
                "estimator": estimator,
                "reference_accuracy": ref_acc,
                "estimated_accuracy": est_acc,
                "estimated_accuracy_interval": [float(lo), float(hi)],
                "interval_level": 1.0 - 2.0 * self.alpha,
                # The interval is over the replicates drawn: few when the p-value was
                # decided early (no drop in sight), all of them when it matters.
                "resampling": resampling.evidence(),
                "estimated_accuracy_unlabeled": float(expected.mean()) if expected.size else None,
                "realised_accuracy_labeled_current": float(cur_y.mean()) if cur_y.size else None,
                "drop_lower_bound": float(np.quantile(drops, self.alpha)),
                "n_calibration": int(has_conf.sum()),
                "n_reference_labeled": int(ref_y.size),
                "n_current_labeled": int(cur_y.size),
                "n_current_unlabeled_estimated": int(cur_uc.size),
            }
        )
        return float(resampling.p_value), True

    def _coverage_fall(
        self,
        ref_counts: LabelCounts,
        cur_counts: LabelCounts,
        now: float,
        ev: dict[str, Any],
        reasons: list[str],
        *,
        recent_half: bool = False,
    ) -> tuple[float, bool] | None:
        """Did labels stop arriving? Coverage at the reference's usual label delay, current
        vs reference: Fisher's exact test, one-sided, gated by ``min_coverage_fall``.
        ``recent_half``: the current traces of the later half of those old enough."""
        delays = [c.delays for c in ref_counts.cohorts.values() if c.delays.size]
        if not delays:
            reasons.append("no reference label with a known arrival time: no coverage baseline")
            return None
        age = float(np.quantile(np.concatenate(delays), 0.9))
        since = -np.inf
        if recent_half:
            first = earliest_end(cur_counts)
            if first is None or first >= now - age:
                return None
            since = (first + now - age) / 2.0
        k_r, n_r = coverage_at_age(ref_counts, age, now)
        k_c, n_c = coverage_at_age(cur_counts, age, now, since=since)
        if n_r < self.min_labeled or n_c < self.min_current:
            reasons.append(
                f"{n_c} current traces older than the usual label delay ({age / 3600:.1f} h; "
                f"< {self.min_current})"
            )
            return None
        rate_r, rate_c = k_r / n_r, k_c / n_c
        ev["coverage_at_age"] = {
            "age_s": age, "reference": rate_r, "current": rate_c,
            "reference_traces": n_r, "current_traces": n_c,
        }  # fmt: skip
        table = [[k_r, n_r - k_r], [k_c, n_c - k_c]]
        p = float(stats.fisher_exact(table, alternative="greater").pvalue)
        if recent_half:
            # Half the traces: the point estimate crosses the gate by chance where the
            # whole window's does not (a 0.5 -> 0.3 coverage, above the gate, fired 5 times
            # in 50): gate the recent half on its 95% upper (Clopper-Pearson) bound.
            upper = float(stats.beta.ppf(0.95, k_c + 1, n_c - k_c)) if k_c < n_c else 1.0
            return p, upper <= (1.0 - self.min_coverage_fall) * rate_r
        return p, rate_c <= (1.0 - self.min_coverage_fall) * rate_r
