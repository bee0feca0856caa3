"""FM-2 :class:`ToolCascadeDetector`: cascade lift, available-but-wrong results, latency."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from detectors.params import param
from detectors.records import DetectorResult, TraceWindow
from detectors.significance import holm_verdict, sub_test
from detectors.step_profiles import whole_window_profiles
from detectors.tool_cascades.tool_calls import (
    depth_histogram,
    excess_risk,
    log_lift,
    spearman_rho,
    tool_window,
)
from detectors.window_permutation import WindowTest

FAILURE_MODE = "FM-2"


@dataclass(frozen=True, kw_only=True)
class ToolCascadeDetector(WindowTest):
    """FM-2: tool failures that cascade, and tool results that are available but wrong.

    For every tool call ``t`` with a later step, *what follows* is the steps after it up
    to and including the next tool call (to the end of the trace when none follows): real
    agents put a model reply between tool calls, and what a failed call spoils is the next
    call (:func:`~detectors.tool_cascades.tool_calls.cascades`). The cascade lift is
    ``P(what follows fails | t failed) / P(what follows fails | t ok)``, each rate smoothed
    as ``(failures + 0.5) / (n + 1)``. A cascade is a run of failed steps that a failed tool
    call starts, which ok model steps do not end and an ok tool call does; its depth is
    the number of failed steps after the tool.

    Sub-tests, Holm-adjusted at ``alpha``:

    * **cascade_lift** (reference needed, unless ``without_reference``): Fisher's exact
      test (one-sided, greater) on the current 2x2 table, and a trace-permutation test
      that the excess risk
      ``P(t+1 fails | t failed) - P(t+1 fails | t ok)`` is larger than the reference's
      (less noisy than the lift when failures are rare); the sub-test's p is the larger of the two (an
      intersection-union test, valid at ``alpha`` without adjustment: it fires only when
      cascades are both present and worse than before, so an agent that always cascaded
      stays quiet). Fires only if ``lift >= min_lift * max(reference lift, 1)``. Without an
      adequate reference it is not tested: a failed call makes the next one likelier in
      every real agent (tau-bench airline, gpt-4o: 27.5% vs 5.9%), so Fisher's test alone
      fired on 20 of 20 clean 2 h windows of the real-shaped generator;
      ``without_reference=True`` restores it (then with Fisher's test alone, lift against 1).
    * **available_but_wrong** (reference needed): per tool with ``min_tool_calls`` ok calls
      in both windows, Fisher's exact test that the rate of ok-but-partial/stale/empty
      results (:func:`available_but_wrong`) rose; Bonferroni over the tools whose smallest
      attainable p (given the margins) is at most ``alpha`` (Tarone, 1990); a tool
      counts only if its rate rose by ``>= min_abw_increase``.
    * **latency_quality** (reference needed): Spearman correlation, per trace, of mean tool
      latency with :func:`trace_quality`; one-sided test on Fisher-z with the Fieller
      variance ``1.06 / (n - 3)`` that it fell; fires only if it is negative and fell by
      ``>= min_rho_drop``.

    The result's ``statistic`` is the current lift (NaN when too few tool failures),
    ``threshold`` the lift it must reach, ``p_value`` the smallest Holm-adjusted p;
    ``evidence`` holds the cascade depth histograms (current and reference), the tools
    ranked by cascades started, per-tool available-but-wrong rates, the latency-quality
    correlations, ``example_trace_ids`` (longest cascades) and each sub-test. No tool call
    in the current window, or no sub-test with enough data, gives ``insufficient_data``.

    Calibration (tests/detectors/test_tool_cascades.py, seeded): clean windows with
    per-trace frailty fire 0/60 runs; model-step failure after a failed tool 12% -> 45%
    (400 traces x 4 tool calls) is caught in 100% (12% -> 35%: 80%), the next tool call
    failing 15% -> 45% after a failed one, with a model reply between, in 10/10,
    ok-but-partial db results 5% -> 15% in 100%. References: Fisher's exact test; Tarone (1990) for discrete Bonferroni; Fieller,
    Hartley & Pearson (1957) for the variance of Spearman's rho; Holm (1979).

    Parameters
    ----------
    alpha, n_permutations, seed, sources : see :class:`detectors.window_permutation.WindowTest`
    min_lift : float, default 1.5
    min_failures : int, default 10
        Failed and ok tool calls with a following step needed per window for the lift.
    min_tool_calls : int, default 30
    min_abw_increase : float, default 0.05
    min_traces : int, default 30
        Traces with a tool call (and varying latency and quality) for the correlation.
    min_rho_drop : float, default 0.2
        Smallest fall of the latency-quality rank correlation that counts.
    without_reference : bool, default False
        Test the lift against 1 when no reference window holds ``min_failures`` failed
        and ok tool calls.

    Examples
    --------
    >>> from detectors.records import Step, TraceRecord
    >>> rng = np.random.default_rng(0)
    >>> def trace(i, p_cascade):
    ...     failed = bool(rng.random() < 0.2)
    ...     after = "error" if rng.random() < (p_cascade if failed else 0.05) else "ok"
    ...     steps = (Step(0, "tool", "call", "error" if failed else "ok", tool_name="crm"),
    ...              Step(1, "llm", "answer", after))
    ...     return TraceRecord(f"t{i}", "agent", steps=steps)
    >>> reference = [trace(i, 0.1) for i in range(400)]
    >>> current = [trace(i, 0.6) for i in range(400)]
    >>> result = ToolCascadeDetector().test(reference, current)
    >>> result.fired, result.evidence["cascade_tools"][0]["tool"]
    (True, 'crm')
    >>> ToolCascadeDetector().test(reference, reference[:200]).fired
    False
    """

    needs: ClassVar[tuple[str, ...]] = ("steps", "tool_steps", "true_scores")
    window_counts: ClassVar[tuple[str, ...]] = ()
    checks_silence: ClassVar[bool] = False

    min_lift: float = param(1.5, ge=1.0)
    min_failures: int = param(10, ge=1)
    min_tool_calls: int = param(30, ge=1)
    min_abw_increase: float = param(0.05, ge=0.0, lt=1.0)
    min_traces: int = param(30, ge=4)
    min_rho_drop: float = param(0.2, ge=0.0, lt=2.0)
    without_reference: bool = param(False)

    def _has_lift_data(self, window: dict[str, Any]) -> bool:
        _, n1, _, n0 = window["pair_sums"]
        return bool(min(n1, n0) >= self.min_failures)

    def _lift(self, cur: dict, ref: dict, has_ref: bool, ev: dict) -> tuple[float, float, bool]:
        a, n1, c, n0 = cur["pair_sums"]
        lift = float(np.exp(log_lift(cur["pair_sums"])))
        p = float(stats.fisher_exact([[a, n1 - a], [c, n0 - c]], alternative="greater").pvalue)
        ev["fisher_p_value"] = p
        baseline = 1.0
        if has_ref:
            ref_lift = float(np.exp(log_lift(ref["pair_sums"])))
            ev["reference_lift"] = ref_lift
            baseline = max(ref_lift, 1.0)
            # The increase is tested on the excess risk, not on the lift: with rare failures
            # after ok calls the lift's denominator is noisy and would waste power.
            _, p_shift = self.permutation_test(
                cur["pairs"], ref["pairs"], excess_risk,
                current_weights=cur["pair_weights"], reference_weights=ref["pair_weights"],
            )  # fmt: skip
            ev["lift_increase_p_value"] = p_shift
            p = max(p, p_shift)
        ev["threshold"] = self.min_lift * baseline
        return lift, p, lift >= self.min_lift * baseline

    def _abw(self, cur: dict, ref: dict, ev: dict) -> tuple[float, bool] | None:
        rows = []
        for tool in sorted(set(cur["abw"]) & set(ref["abw"])):
            (kc, nc), (kr, nr) = cur["abw"][tool], ref["abw"][tool]
            # Tarone: a tool whose Fisher p could not reach alpha even with every flagged
            # call in the current window (given the margins) cannot fire; leave it out.
            if min(nc, nr) < self.min_tool_calls or (
                stats.hypergeom.sf(kc + kr - 1, nc + nr, kc + kr, nc) > self.alpha
            ):
                continue
            table = [[kc, nc - kc], [kr, nr - kr]]
            p = float(stats.fisher_exact(table, alternative="greater").pvalue)
            rise = kc / nc - kr / nr
            rows.append(
                {"tool": tool, "rate": kc / nc, "reference_rate": kr / nr, "calls": nc,
                 "p_value": p, "effect_ok": rise >= self.min_abw_increase}
            )  # fmt: skip
        if not rows:
            return None
        rows.sort(key=lambda r: (r["p_value"], r["tool"]))
        ev["available_but_wrong"] = rows
        gated = [r["p_value"] for r in rows if r["effect_ok"]]
        return (min(1.0, len(rows) * min(gated)) if gated else 1.0), bool(gated)

    def _latency(self, cur: dict, ref: dict, ev: dict) -> tuple[float, bool] | None:
        n_c, n_r = cur["latency"].size, ref["latency"].size
        if min(n_c, n_r) < self.min_traces:
            return None
        rho_c = spearman_rho(cur["latency"], cur["quality"])
        rho_r = spearman_rho(ref["latency"], ref["quality"])
        if rho_c is None or rho_r is None:
            return None
        ev["latency_quality_rho"] = rho_c
        ev["reference_latency_quality_rho"] = rho_r
        z_c, z_r = (np.arctanh(np.clip(r, -0.999, 0.999)) for r in (rho_c, rho_r))
        z = (z_r - z_c) / np.sqrt(1.06 / (n_c - 3) + 1.06 / (n_r - 3))
        return float(stats.norm.sf(z)), rho_c < 0 and rho_r - rho_c >= self.min_rho_drop

    def test(
        self, reference: TraceWindow, current: TraceWindow, *, now: float | None = None
    ) -> DetectorResult:
        """Compare the windows; ``now`` is not used (the windows are already as of then)."""
        cur, ref = (
            tool_window(
                self.of_sources(window),
                whole_window_profiles(window, self.sources),
            )
            for window in (current, reference)
        )
        if cur["n_tool_calls"] == 0:
            return DetectorResult.insufficient(FAILURE_MODE, "no tool calls in current window")
        has_ref = self._has_lift_data(ref)
        ev: dict[str, Any] = {
            "tool_calls": cur["n_tool_calls"],
            "counted_traces": "whole window" if cur["pair_weights"] is not None else "records",
            "cascade_depths": depth_histogram(cur["depths"]),
            "reference_cascade_depths": depth_histogram(ref["depths"]),
            "mean_cascade_depth": float(cur["depths"].mean()) if cur["depths"].size else None,
            "cascade_tools": sorted(
                (
                    {
                        "tool": t,
                        "failures": len(d),
                        "cascades": sum(x > 0 for x in d),
                        "mean_depth": float(np.mean(d)),
                    }
                    for t, d in cur["started"].items()
                ),
                key=lambda r: (-r["cascades"], -r["failures"], r["tool"]),
            )[:5],  # fmt: skip
            "example_trace_ids": cur["examples"],
            "reference_used": has_ref,
        }
        sub_tests: dict[str, dict[str, Any]] = {}
        lift = float("nan")
        if self._has_lift_data(cur) and (has_ref or self.without_reference):
            lift, p, ok = self._lift(cur, ref, has_ref, ev)
            ev["cascade_lift"] = lift
            sub_tests["cascade_lift"] = sub_test(p, ok)
        for name, outcome in (
            ("available_but_wrong", self._abw(cur, ref, ev)),
            ("latency_quality", self._latency(cur, ref, ev)),
        ):
            if outcome is not None:
                sub_tests[name] = sub_test(*outcome)
        if not sub_tests and self._has_lift_data(cur) and not has_ref:
            return DetectorResult.insufficient(
                FAILURE_MODE,
                f"no reference yet (fewer than {self.min_failures} failed and ok tool calls "
                "with a next step before): cascades are judged against the agent's own "
                "history, since a failed call makes the next one likelier in every real agent",
                **ev,
            )
        if not sub_tests:
            return DetectorResult.insufficient(
                FAILURE_MODE,
                f"fewer than {self.min_failures} failed and ok tool calls with a next step, "
                "and no tool or latency sample large enough in both windows",
                **ev,
            )
        verdict = holm_verdict(list(sub_tests.values()), alpha=self.alpha)
        ev["sub_tests"] = sub_tests
        return DetectorResult(
            failure_mode=FAILURE_MODE,
            statistic=lift,
            threshold=float(ev.get("threshold", float("nan"))),
            p_value=verdict.p_value,
            fired=verdict.fired,
            evidence=ev,
        )
