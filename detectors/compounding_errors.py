"""FM-1 compounding decision errors: does one wrong step make the next ones more likely?"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from detectors.mantel_haenszel import cmh_greater, log_mh_ratio
from detectors.params import param
from detectors.records import DetectorResult, TraceRecord, TraceWindow
from detectors.significance import holm_verdict, sub_test
from detectors.step_profiles import (
    profile_steps,
    step_profile,
    weighted_rows,
    whole_window_profiles,
)
from detectors.window_permutation import WindowTest

FAILURE_MODE = "FM-1"
# The two families of units, each with its own ratio and sub-test: name -> the prefix of
# its evidence keys (the decisions' keep the names they always had).
FAMILIES: dict[str, str] = {"compounding": "", "tool_compounding": "tool_"}


@dataclass(frozen=True, kw_only=True)
class CompoundingErrorDetector(WindowTest):
    """FM-1: error hazard after an earlier error (decision or tool call), against independence.

    Two families of steps at depth ``d >= 1``, each recording whether the step failed
    (:func:`step_error`) and whether it is *exposed* (an earlier error in the trace):

    * **decisions** (steps that are not tool calls), exposed once an earlier decision
      failed; the steps right after a failure run that a failed tool call began are FM-2's
      cascade and are left out, and such runs are no earlier decision error;
    * **tool calls**, exposed once any earlier step failed: real agents' errors are failed
      tool calls, and their later failures are further failed calls and retries. The call
      right after a failed one is FM-2's (the cascade) and is left out.

    Per family, stratified by depth (depths ``>= max_depth`` pooled), the compounding ratio
    is the Mantel-Haenszel risk ratio ``h(d | earlier error) / h(d | no earlier error)``;
    under independent errors it is 1 whatever the per-depth base hazard.

    Sub-tests, Holm-adjusted at ``alpha``:

    * **compounding** (decisions) and **tool_compounding** (tool calls), each: with an
      adequate reference, a trace-permutation test that the log
      ratio is larger in ``current`` than in ``reference`` (an agent that always had
      correlated errors does not keep firing). Without one the family is not tested and
      the result is ``insufficient_data`` until a reference fills: real agents' errors
      cluster by task (a hard task fails several calls), so independence is not their
      healthy state; on clean traffic of the real shape (pipelines/scenarios, 2 h windows,
      20 seeds) the test of ratio 1 fired 14 times in 20. ``without_reference=True``
      restores that test (one-sided Cochran-Mantel-Haenszel of ratio 1) for agents
      whose errors are known to be independent. Fires only if also
      ``ratio >= min_ratio * max(reference ratio, 1)`` (reference ratio 1 when absent).
    * **coherence illusion** (with a reference only): per trace, the mean step confidence
      after the first non-final step with confidence ``< low_confidence``; the window
      score is the mean over traces. One-sided Welch t-test current > reference, fires
      only if the increase is ``>= min_confidence_increase``.

    The result's ``statistic`` is the current compounding ratio of the family with the
    smaller p, ``threshold`` the ratio it must reach, ``p_value`` the smallest
    Holm-adjusted p; ``evidence`` holds per family (the tool calls' keys prefixed
    ``tool_``) the ratios, the per-depth hazards, ``compounding_begins_at_depth`` (first depth with >= 5 exposed steps whose
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
    alpha, n_permutations, seed, sources : see :class:`detectors.window_permutation.WindowTest`
    min_ratio : float, default 1.5
        Minimum effect: how many times the baseline ratio the current ratio must be.
    low_confidence : float, default 0.5
    min_confidence_increase : float, default 0.05
    min_traces : int, default 30
        Multi-step traces needed in a window (fewer: insufficient data / no reference).
    min_exposed : int, default 10
        Steps after an earlier error needed in a window for the compounding sub-test.
    max_depth : int, default 12
        Depths at or beyond this are pooled into one stratum.
    without_reference : bool, default False
        Test against independent errors when no reference window is adequate.

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
    window_counts: ClassVar[tuple[str, ...]] = ()
    checks_silence: ClassVar[bool] = False

    min_ratio: float = param(1.5, ge=1.0)
    low_confidence: float = param(0.5, gt=0.0, lt=1.0)
    min_confidence_increase: float = param(0.05, ge=0.0)
    min_traces: int = param(30, ge=2)
    min_exposed: int = param(10, ge=1)
    max_depth: int = param(12, ge=1, le=1_000)
    without_reference: bool = param(False)

    def _profile_counts(self, profile: str) -> tuple[np.ndarray, int]:
        """Counts (a, n1, c, n0) per depth of one trace's step profile
        (:mod:`detectors.step_profiles`) for the two families, decisions then tool calls
        (``2 * max_depth * 4`` values), and the failures after an earlier error.

        *Decisions*: every step that is not a tool call, exposed once an earlier decision
        failed; the steps right after a failure run that a failed tool call began are
        FM-2's cascade and are left out, and such runs are no earlier error. *Tool calls*:
        real agents' errors are failed tool calls, so every tool call is a unit, exposed
        once any earlier step failed; the call right after a failed one is FM-2's and left
        out.

        >>> d = CompoundingErrorDetector(max_depth=4)
        >>> d._profile_counts("tTstT")[1]  # the last T follows an ok call: compounded
        1
        >>> d._profile_counts("tTsT")[1]  # it is the call right after the failed one: FM-2's
        0
        >>> d._profile_counts("sSsS")[1]  # a decision failing after a failed decision
        1
        """
        decisions = np.zeros((self.max_depth, 4))
        tools = np.zeros((self.max_depth, 4))
        exposed, prev_cascade, compounded = False, False, 0
        tool_exposed, after_failed_tool = False, False
        for i, (tool, err) in enumerate(profile_steps(profile)):
            row = min(max(i, 1), self.max_depth) - 1
            cascade = err and (tool or prev_cascade)
            if i >= 1 and not tool and not prev_cascade:
                decisions[row, 0 if exposed else 2] += err
                decisions[row, 1 if exposed else 3] += 1
                compounded += int(exposed and err)
            if i >= 1 and tool and not after_failed_tool:
                tools[row, 0 if tool_exposed else 2] += err
                tools[row, 1 if tool_exposed else 3] += 1
                compounded += int(tool_exposed and err)
            exposed = exposed or (err and not tool and not cascade)
            prev_cascade = cascade
            tool_exposed = tool_exposed or err
            if tool:
                after_failed_tool = err
        return np.concatenate([decisions.reshape(-1), tools.reshape(-1)]), compounded

    def _coherence(self, trace: TraceRecord) -> float | None:
        steps = sorted(trace.steps, key=lambda s: s.index)
        for i, step in enumerate(steps[:-1]):
            if step.confidence is not None and step.confidence < self.low_confidence:
                later = [s.confidence for s in steps[i + 1 :] if s.confidence is not None]
                return float(np.mean(later)) if later else None
        return None

    def _window(self, window: Sequence[TraceRecord]) -> dict[str, Any]:
        traces = self.of_sources(window)
        multi = [t for t in traces if len(t.steps) >= 2]
        profiles = [step_profile(t.steps) for t in multi]
        rows = [self._profile_counts(p) for p in profiles]
        scores = [s for s in (self._coherence(t) for t in multi) if s is not None]
        compounded = sorted(
            ((r[1], t.trace_id) for r, t in zip(rows, multi, strict=True) if r[1] > 0),
            key=lambda x: (-x[0], x[1]),
        )
        width = self.max_depth * 4 * len(FAMILIES)
        whole = whole_window_profiles(window, self.sources)
        if whole is None:  # the records are the window: one count row per trace
            counts = np.array([r[0] for r in rows]).reshape(len(rows), width)
            weights = None
        else:  # a sample: count every trace of the window by its profile
            whole = [(p, n) for p, n in whole if len(p) >= 2]
            found = {p: self._profile_counts(p)[0] for p, _ in whole}
            counts, weights = weighted_rows(found, whole, width)
        out: dict[str, Any] = {
            "n_traces": len(multi) if weights is None else int(weights.sum()),
            "weights": weights,
            "coherence": np.array(scores),
            "examples": [tid for _, tid in compounded[:5]],
        }
        step = self.max_depth * 4
        for k, family in enumerate(FAMILIES):
            part = counts[:, k * step : (k + 1) * step]
            sums = part.sum(axis=0) if weights is None else weights @ part
            out[family] = {
                "counts": part,
                "sums": sums,
                "exposed": int(sums.reshape(self.max_depth, 4)[:, 1].sum()),
                "ratio": float(np.exp(log_mh_ratio(sums))),
            }
        return out

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
        self, reference: TraceWindow, current: TraceWindow, *, now: float | None = None
    ) -> DetectorResult:
        """Compare the windows; ``now`` is not used (the windows are already as of then)."""
        cur, ref = self._window(current), self._window(reference)
        if cur["n_traces"] < self.min_traces:
            return DetectorResult.insufficient(
                FAILURE_MODE,
                f"{cur['n_traces']} multi-step traces in current window (< {self.min_traces})",
            )
        sub_tests: dict[str, dict[str, Any]] = {}
        evidence: dict[str, Any] = {
            "counted_traces": "whole window" if cur["weights"] is not None else "records",
            "example_trace_ids": cur["examples"],
        }
        ratios: dict[str, tuple[float, float]] = {}  # family -> (ratio, threshold)
        unreferenced: list[str] = []  # families with current data but no reference yet
        for family, key in FAMILIES.items():
            c, r = cur[family], ref[family]
            has_ref = ref["n_traces"] >= self.min_traces and r["exposed"] >= self.min_exposed
            baseline = max(r["ratio"], 1.0) if has_ref else 1.0
            evidence[f"{key}compounding_ratio"] = c["ratio"]
            evidence[f"{key}reference_ratio"] = r["ratio"] if has_ref else None
            evidence[f"{key}steps_after_error"] = c["exposed"]
            table, begins = self._depth_table(c["sums"], baseline)
            evidence[f"{key}by_depth"] = table
            evidence[f"{key}compounding_begins_at_depth"] = begins
            if c["exposed"] < self.min_exposed:
                continue
            if not (has_ref or self.without_reference):
                unreferenced.append(family)
                continue
            if has_ref:
                _, p = self.permutation_test(
                    c["counts"], r["counts"], log_mh_ratio,
                    current_weights=cur["weights"], reference_weights=ref["weights"],
                )  # fmt: skip
            else:
                p = cmh_greater(c["sums"])
            ok = c["ratio"] >= self.min_ratio * baseline
            sub_tests[family] = sub_test(p, ok, reference_used=has_ref)
            ratios[family] = (c["ratio"], self.min_ratio * baseline)

        c_scores, r_scores = cur["coherence"], ref["coherence"]
        evidence["coherence_illusion"] = float(c_scores.mean()) if c_scores.size else None
        if c_scores.size >= self.min_traces and r_scores.size >= self.min_traces:
            change = float(c_scores.mean() - r_scores.mean())
            evidence["coherence_illusion_change"] = change
            sub_tests["coherence_illusion"] = sub_test(
                _welch_greater(c_scores, r_scores), change >= self.min_confidence_increase
            )
        if not sub_tests and unreferenced:
            return DetectorResult.insufficient(
                FAILURE_MODE,
                f"no reference yet for {' and '.join(unreferenced)} (the reference window holds "
                f"{ref['n_traces']} multi-step traces; {self.min_traces} with "
                f"{self.min_exposed} steps after an earlier error needed): compounding is "
                "judged against the agent's own history, since real agents' errors cluster "
                "by task",
                **evidence,
            )
        if not sub_tests:
            return DetectorResult.insufficient(
                FAILURE_MODE,
                f"{cur['compounding']['exposed']} decision steps and "
                f"{cur['tool_compounding']['exposed']} tool calls after an earlier error "
                f"(< {self.min_exposed}) and too few low-confidence traces to score the "
                "coherence illusion",
                **evidence,
            )
        verdict = holm_verdict(list(sub_tests.values()), alpha=self.alpha)
        evidence["sub_tests"] = sub_tests
        evidence["reference_used"] = any(t.get("reference_used") for t in sub_tests.values())
        # The statistic is the ratio of the family with the smaller p (decisions on a tie).
        ran = sorted(ratios, key=lambda f: (sub_tests[f]["p_value"], f != "compounding"))
        statistic, threshold = ratios[ran[0]] if ran else (cur["compounding"]["ratio"], np.nan)
        return DetectorResult(
            failure_mode=FAILURE_MODE,
            statistic=statistic,
            threshold=threshold,
            p_value=verdict.p_value,
            fired=verdict.fired,
            evidence=evidence,
        )


def _welch_greater(x: np.ndarray, y: np.ndarray) -> float:
    """One-sided Welch t-test that mean(x) > mean(y); defined for constant samples too."""
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        return 0.0 if x[0] > y[0] else 1.0
    return float(stats.ttest_ind(x, y, equal_var=False, alternative="greater").pvalue)
