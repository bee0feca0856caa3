"""FM-1 compounding decision errors: does one wrong step make the next ones more likely?"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from detectors.records import DetectorResult, TraceRecord
from detectors.significance import (
    check_window_test_params,
    holm_verdict,
    stop_after_for,
    sub_test,
)
from detectors.step_profiles import (
    profile_steps,
    step_profile,
    weighted_rows,
    whole_window_profiles,
)
from detectors.window_permutation import window_permutation_test

FAILURE_MODE = "FM-1"


def log_mh_ratio(sums: np.ndarray) -> np.ndarray:
    """Log Mantel-Haenszel risk ratio from (..., K*4) sums of (a, n1, c, n0) per stratum.

    ``a`` errors among ``n1`` exposed steps, ``c`` among ``n0`` unexposed; 0.5 is added to
    numerator and denominator (Haldane) so empty cells stay finite.
    """
    cells = sums.reshape(*sums.shape[:-1], -1, 4)
    a, n1, c, n0 = (cells[..., i] for i in range(4))
    n = np.maximum(n1 + n0, 1.0)
    num = (a * n0 / n).sum(axis=-1)
    den = (c * n1 / n).sum(axis=-1)
    return np.asarray(np.log((num + 0.5) / (den + 0.5)))


class CompoundingErrorDetector:
    """FM-1: error hazard after an earlier error (decision or tool call), against independence.

    For every step at depth ``d >= 1``, tool calls included, the detector records whether
    it failed and whether an earlier step of the trace failed (:func:`step_error`): real
    agents' early errors are failed tool calls, and their later failures are further
    failed calls. What follows a failed tool call up to and including the next tool call
    belongs to FM-2 (the cascade) and is left out; it still counts as an earlier error
    for the steps beyond it.
    Stratified by depth (depths ``>= max_depth`` pooled), the compounding ratio is the
    Mantel-Haenszel risk ratio ``h(d | earlier error) / h(d | no earlier error)``;
    under independent errors it is 1 whatever the per-depth base hazard.

    Sub-tests, Holm-adjusted at ``alpha``:

    * **compounding**: with an adequate reference, a trace-permutation test that the log
      ratio is larger in ``current`` than in ``reference`` (an agent that always had
      correlated errors does not keep firing); without one, the one-sided
      Cochran-Mantel-Haenszel test of ratio 1. Fires only if also
      ``ratio >= min_ratio * max(reference ratio, 1)`` (reference ratio 1 when absent).
    * **coherence illusion** (with a reference only): per trace, the mean step confidence
      after the first non-final step with confidence ``< low_confidence``; the window
      score is the mean over traces. One-sided Welch t-test current > reference, fires
      only if the increase is ``>= min_confidence_increase``.

    The result's ``statistic`` is the current compounding ratio, ``threshold`` the ratio it
    must reach, ``p_value`` the smallest Holm-adjusted p; ``evidence`` holds the per-depth
    hazards, ``compounding_begins_at_depth`` (first depth with >= 5 exposed steps whose
    ratio clears the threshold), ``example_trace_ids``, the coherence-illusion score and its
    change, and each sub-test. Fewer than ``min_traces`` multi-step traces, or no sub-test
    with enough data, gives ``insufficient_data``.

    Calibration (tests/detectors/test_compounding_errors.py, seeded): clean windows with
    trace-level frailty fire 0/60 runs; a x3 decision hazard after the first wrong decision
    (300 traces x 8 steps, ~6% base rate, independent tool failures) is caught in 35/40
    runs, x4 in 40/40; tool calls failing x3 as often beyond the call after a failed one
    (real agents' shape, 400 traces) in 10/10; a coherence-illusion rise of 0.2 in 92%.
    References: Mantel & Haenszel (1959); Holm (1979); the "coherence
    illusion" of arXiv 2605.01604.

    Parameters
    ----------
    alpha : float, default 0.01
        Family-wise false-alarm rate per run.
    min_ratio : float, default 1.5
        Minimum effect: how many times the baseline ratio the current ratio must be.
    low_confidence : float, default 0.5
    min_confidence_increase : float, default 0.05
    min_traces : int, default 30
        Multi-step traces needed in a window (fewer: insufficient data / no reference).
    min_exposed : int, default 10
        Steps after an earlier error needed in a window for the compounding sub-test.
    max_depth : int, default 12
    n_permutations : int, default 999
    seed : int, default 0
    sources : sequence of str, default ("production",)
        Trace sources analysed; eval runs and shadow replays are left out by default.

    Examples
    --------
    >>> from detectors.records import Step, TraceRecord
    >>> rng = np.random.default_rng(0)
    >>> def trace(i, boost):
    ...     steps, wrong = [], False
    ...     for d in range(8):
    ...         wrong_now = bool(rng.random() < (0.05 * boost if wrong else 0.05))
    ...         steps.append(Step(d, "llm", "think", "error" if wrong_now else "ok"))
    ...         wrong = wrong or wrong_now
    ...     return TraceRecord(f"t{i}", "agent", steps=tuple(steps))
    >>> reference = [trace(i, 1.0) for i in range(300)]
    >>> current = [trace(i, 6.0) for i in range(300)]
    >>> result = CompoundingErrorDetector().test(reference, current)
    >>> result.fired, result.statistic > 3.0
    (True, True)
    >>> CompoundingErrorDetector().test(reference, reference[:150]).fired
    False
    """

    needs: ClassVar[tuple[str, ...]] = ("steps", "step_confidence")

    def __init__(
        self,
        *,
        alpha: float = 0.01,
        min_ratio: float = 1.5,
        low_confidence: float = 0.5,
        min_confidence_increase: float = 0.05,
        min_traces: int = 30,
        min_exposed: int = 10,
        max_depth: int = 12,
        n_permutations: int = 999,
        seed: int = 0,
        sources: Sequence[str] = ("production",),
    ) -> None:
        check_window_test_params(alpha=alpha, sources=sources, n_permutations=n_permutations)
        if min_ratio < 1.0:
            raise ValueError(f"min_ratio must be >= 1, got {min_ratio}")
        if not 0.0 < low_confidence < 1.0:
            raise ValueError(f"low_confidence must be in (0, 1), got {low_confidence}")
        if min_confidence_increase < 0.0:
            raise ValueError(f"min_confidence_increase must be >= 0, got {min_confidence_increase}")
        if min_traces < 2:
            raise ValueError(f"min_traces must be >= 2, got {min_traces}")
        if min_exposed < 1:
            raise ValueError(f"min_exposed must be >= 1, got {min_exposed}")
        if max_depth < 1:
            raise ValueError(f"max_depth must be >= 1, got {max_depth}")
        self.alpha = alpha
        self.min_ratio = min_ratio
        self.low_confidence = low_confidence
        self.min_confidence_increase = min_confidence_increase
        self.min_traces = min_traces
        self.min_exposed = min_exposed
        self.max_depth = max_depth
        self.n_permutations = n_permutations
        self.seed = seed
        self.sources = frozenset(sources)

    def _profile_counts(self, profile: str) -> tuple[np.ndarray, int]:
        """(max_depth x 4) counts (a, n1, c, n0) per depth of one trace's step profile
        (:mod:`detectors.step_profiles`), and the errors after an error.

        Every step from depth 1 is a unit, tool calls included: real agents' errors are
        failed tool calls. What follows a failed tool call up to and including the next
        tool call is FM-2's (:func:`~detectors.tool_cascades.tool_calls.cascades`) and is
        left out; every failed step, tool calls included, is an earlier error for the rest.

        >>> d = CompoundingErrorDetector(max_depth=4)
        >>> d._profile_counts("tTstT")[1]  # the last T follows an ok tool: a compounded error
        1
        >>> d._profile_counts("tTsT")[1]  # it is the call after the failed one: FM-2's
        0
        """
        counts = np.zeros((self.max_depth, 4))
        exposed, after_failed_tool, compounded = False, False, 0
        for i, (tool, err) in enumerate(profile_steps(profile)):
            if i >= 1 and not after_failed_tool:
                row = counts[min(i, self.max_depth) - 1]
                row[0 if exposed else 2] += err
                row[1 if exposed else 3] += 1
                compounded += int(exposed and err)
            exposed = exposed or err
            if tool:
                after_failed_tool = err
        return counts.reshape(-1), compounded

    def _coherence(self, trace: TraceRecord) -> float | None:
        steps = sorted(trace.steps, key=lambda s: s.index)
        for i, step in enumerate(steps[:-1]):
            if step.confidence is not None and step.confidence < self.low_confidence:
                later = [s.confidence for s in steps[i + 1 :] if s.confidence is not None]
                return float(np.mean(later)) if later else None
        return None

    def _window(self, window: Sequence[TraceRecord]) -> dict[str, Any]:
        traces = [t for t in window if t.source in self.sources]
        multi = [t for t in traces if len(t.steps) >= 2]
        profiles = [step_profile(t.steps) for t in multi]
        rows = [self._profile_counts(p) for p in profiles]
        scores = [s for s in (self._coherence(t) for t in multi) if s is not None]
        compounded = sorted(
            ((r[1], t.trace_id) for r, t in zip(rows, multi, strict=True) if r[1] > 0),
            key=lambda x: (-x[0], x[1]),
        )
        width = self.max_depth * 4
        whole = whole_window_profiles(window, self.sources)
        if whole is None:  # the records are the window: one count row per trace
            counts = np.array([r[0] for r in rows]).reshape(len(rows), width)
            weights = None
        else:  # a sample: count every trace of the window by its profile
            whole = [(p, n) for p, n in whole if len(p) >= 2]
            found = {p: self._profile_counts(p)[0] for p, _ in whole}
            counts, weights = weighted_rows(found, whole, width)
        sums = counts.sum(axis=0) if weights is None else weights @ counts
        return {
            "n_traces": len(multi) if weights is None else int(weights.sum()),
            "counts": counts,
            "weights": weights,
            "sums": sums,
            "exposed": int(sums.reshape(self.max_depth, 4)[:, 1].sum()),
            "ratio": float(np.exp(log_mh_ratio(sums))),
            "coherence": np.array(scores),
            "examples": [tid for _, tid in compounded[:5]],
        }

    def _depth_table(self, sums: np.ndarray, baseline: float) -> tuple[list, int | None]:
        table, begins = [], None
        for k, (a, n1, c, n0) in enumerate(sums.reshape(-1, 4)):
            if n1 + n0 == 0:
                continue
            h1 = a / n1 if n1 else None
            h0 = c / n0 if n0 else None
            ratio = ((a + 0.5) / (n1 + 1)) / ((c + 0.5) / (n0 + 1))
            depth = k + 1
            table.append(
                {
                    "depth": depth if depth < self.max_depth else f">={depth}",
                    "exposed_steps": int(n1),
                    "hazard_after_error": h1,
                    "unexposed_steps": int(n0),
                    "hazard_no_error": h0,
                }
            )
            if begins is None and n1 >= 5 and ratio >= self.min_ratio * baseline:
                begins = depth
        return table, begins

    def test(
        self,
        reference: Sequence[TraceRecord],
        current: Sequence[TraceRecord],
        *,
        now: float | None = None,
    ) -> DetectorResult:
        """Compare the windows; ``now`` is not used (the windows are already as of then)."""
        cur, ref = self._window(current), self._window(reference)
        if cur["n_traces"] < self.min_traces:
            return DetectorResult.insufficient(
                FAILURE_MODE,
                f"{cur['n_traces']} multi-step traces in current window (< {self.min_traces})",
            )
        has_ref = ref["n_traces"] >= self.min_traces and ref["exposed"] >= self.min_exposed
        baseline = max(ref["ratio"], 1.0) if has_ref else 1.0
        sub_tests: dict[str, dict[str, Any]] = {}
        evidence: dict[str, Any] = {
            "compounding_ratio": cur["ratio"],
            "reference_ratio": ref["ratio"] if has_ref else None,
            "steps_after_error": cur["exposed"],
            "counted_traces": "whole window" if cur["weights"] is not None else "records",
            "example_trace_ids": cur["examples"],
        }
        if cur["exposed"] >= self.min_exposed:
            if has_ref:
                _, p = window_permutation_test(
                    cur["counts"], ref["counts"], log_mh_ratio,
                    n_permutations=self.n_permutations, seed=self.seed,
                    stop_after=stop_after_for(self.alpha, self.n_permutations),
                    current_weights=cur["weights"], reference_weights=ref["weights"],
                )  # fmt: skip
            else:
                p = _cmh_greater(cur["sums"])
            sub_tests["compounding"] = sub_test(p, cur["ratio"] >= self.min_ratio * baseline)
        table, begins = self._depth_table(cur["sums"], baseline)
        evidence["by_depth"] = table
        evidence["compounding_begins_at_depth"] = begins

        c_scores, r_scores = cur["coherence"], ref["coherence"]
        evidence["coherence_illusion"] = float(c_scores.mean()) if c_scores.size else None
        if c_scores.size >= self.min_traces and r_scores.size >= self.min_traces:
            change = float(c_scores.mean() - r_scores.mean())
            evidence["coherence_illusion_change"] = change
            sub_tests["coherence_illusion"] = sub_test(
                _welch_greater(c_scores, r_scores), change >= self.min_confidence_increase
            )
        if not sub_tests:
            return DetectorResult.insufficient(
                FAILURE_MODE,
                f"{cur['exposed']} steps after an earlier error (< {self.min_exposed}) and "
                "too few low-confidence traces to score the coherence illusion",
                **evidence,
            )
        verdict = holm_verdict(list(sub_tests.values()), alpha=self.alpha)
        evidence["sub_tests"] = sub_tests
        evidence["reference_used"] = has_ref
        return DetectorResult(
            failure_mode=FAILURE_MODE,
            statistic=cur["ratio"],
            threshold=self.min_ratio * baseline,
            p_value=verdict.p_value,
            fired=verdict.fired,
            evidence=evidence,
        )


def _cmh_greater(sums: np.ndarray) -> float:
    """One-sided Cochran-Mantel-Haenszel test (no continuity correction) of ratio > 1."""
    a, n1, c, n0 = sums.reshape(-1, 4).T
    n = n1 + n0
    m1 = a + c
    keep = n >= 2
    expected = (n1 * m1 / np.maximum(n, 1))[keep]
    var = (n1 * n0 * m1 * (n - m1) / np.maximum(n * n * (n - 1), 1))[keep]
    if var.sum() <= 0:
        return 1.0
    z = (a[keep].sum() - expected.sum()) / np.sqrt(var.sum())
    return float(stats.norm.sf(z))


def _welch_greater(x: np.ndarray, y: np.ndarray) -> float:
    """One-sided Welch t-test that mean(x) > mean(y); defined for constant samples too."""
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        return 0.0 if x[0] > y[0] else 1.0
    return float(stats.ttest_ind(x, y, equal_var=False, alternative="greater").pvalue)
