r"""Outcome regressions: the objectives and operational signals every trace carries, watched.

Real agents rarely send what the failure-mode detectors read first (model-step errors,
confidences, eval traffic, proxy scores), but most send a delayed outcome label for some
traces, and every trace has a status, tool calls and a duration. A 22-point fall in real
task success went unseen by FM-1 to FM-7 while any static threshold on the score would
have paged. This detector compares the current window with the reference on:

* **objectives**: each score read as ``true`` or ``guardrail`` (higher is better), the
  latest per trace; one-sided Mann-Whitney U ("current lower"), gated on a standardised
  fall :math:`(\bar x_{ref} - \bar x_{cur}) / s \ge` ``min_effect``. A delayed label counts
  in the window of the trace it labels, not when it arrives; the evidence says how many
  labels each window holds. An objective that a judge's scores predict
  (:attr:`detectors.records.Score.predicts`) is tested on the judge corrected by its labels
  (prediction-powered inference, :mod:`detectors.outcome_judged`) when each window holds
  ``min_ppi_labels`` labeled traces the judge scored; else on its labels alone, or not at
  all (``objectives_without_verdict`` says why). A pass/fail objective whose labels reach
  fewer than half the judged traces is also read from the judge's pass rate on the recent
  half, while the labels show the judge's error rates held and lean toward the fall
  (:func:`detectors.outcome_judged.stable_judge_objective`, method ``judge_stable``). A
  judge's scores are not objectives of their own.
* **trace errors**: the share of traces whose status is ``error``; one-sided Fisher exact
  test, gated on a rise of at least ``min_rate_increase``.
* **tool loops**: the share of traces with a tool loop (one tool called with the same
  arguments 3 times, or again after it failed; found when the trace was derived,
  :attr:`detectors.records.TraceRecord.loop_tool`), among the traces derived for loops;
  one-sided Fisher exact test, gated on a rise of at least ``min_rate_increase``.
* **tool errors**: per tool, the share of the traces calling it in which a call of it
  failed (status, ``error_type`` or ``correct`` = false; by trace, since retries of a
  failing call fail together); Fisher exact per tool, tools that could not reach ``alpha`` with every failure in
  the current window left out first (Tarone 1990), then Holm over the rest.
* **latency**, **steps per trace**, and **tokens** and **cost per trace** (the model
  calls', where they carry them): one-sided Mann-Whitney U ("current greater"), gated on a
  relative rise of the median of at least ``min_relative_increase``.

Labels arrive late, so objectives are tested twice, on the whole current window and on its
recent half (:func:`recent_half`; Holm counts both), and the operational signals, which
every trace carries at once, on the recent half: the default monitor's 8-hour window then
holds twice the labels of its recent 4 hours without slowing what needs no label.

The objectives form one family and the operational signals another; each family gets
half of ``alpha`` and Holm within it (Holm 1979), so the detector fires at most at rate
``alpha`` on stationary traffic (bench and ``tests/detectors/test_outcomes.py``), and a
falling objective does not share its budget with a dozen tools. ``statistic`` is
:math:`-\log_{10}` of the smallest adjusted p-value and ``threshold`` is
:math:`-\log_{10}(\alpha/2)`. No sub-test with enough data gives ``insufficient_data``.

Parameters
----------
alpha : float, default 0.01
min_effect : float, default 0.1
    Smallest standardised fall of an objective (0.1 is a 5-point fall of a success rate
    near 50 %).
min_rate_increase : float, default 0.03
    Smallest rise of an error rate (absolute).
min_relative_increase : float, default 0.2
    Smallest relative rise of median latency or steps per trace.
min_labels : int, default 20
    Fewest traces with the objective in each window.
min_ppi_labels : int, default 10
    Fewest labeled traces that a judge predicting the objective also scored, in each
    window, to test the judge corrected by the labels.
min_traces : int, default 30
    Fewest traces (with a duration, or with steps) per window for the other signals.
min_tool_calls : int, default 20
    Fewest traces calling a tool in each window.
sources : sequence of str, default ("production",)
    Trace sources watched (some of production, eval, shadow).

Examples
--------
>>> import numpy as np
>>> from detectors.records import Score, TraceRecord
>>> rng = np.random.default_rng(0)
>>> def window(start, n, success_rate):
...     return [TraceRecord(f"t{start + i}", "agent", started_at=float(start + i),
...                         ended_at=float(start + i) + 5.0,
...                         scores=(Score("task_success", float(rng.random() < success_rate),
...                                       kind="true", source="delayed"),))
...             for i in range(n)]
>>> det = OutcomeRegressionDetector(alpha=0.01)
>>> det.test(window(0, 300, 0.41), window(1000, 150, 0.41)).fired
False
>>> result = det.test(window(0, 300, 0.41), window(1000, 150, 0.19))
>>> result.fired, result.evidence["objectives"][0]["name"]
(True, 'task_success')
>>> result.evidence["summary"]
'task_success fell 0.403 -> 0.153 on 150 labels (reference 300), p=1.7e-07'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from detectors.outcome_judged import judged_objective, judges_of, stable_judge_objective
from detectors.outcome_onset import onset
from detectors.outcome_summary import describe, example_trace_ids, summary
from detectors.outcome_values import (
    costs,
    label_counts,
    latencies,
    objective_names,
    objective_values,
    recent_half,
    step_counts,
    token_counts,
    tool_calls,
)
from detectors.params import Parameters, TraceSources, param
from detectors.proxy_convergence.objectives import objective_shift
from detectors.records import DetectorResult, TraceRecord, TraceWindow
from detectors.significance import holm_into

FAILURE_MODE = "OUTCOME"


@dataclass(frozen=True, kw_only=True)
class OutcomeRegressionDetector(TraceSources, Parameters):
    """Objectives, error rates, latency and steps per trace: did any get worse?"""

    needs: ClassVar[tuple[str, ...]] = ("true_scores", "steps", "tool_steps")
    window_counts: ClassVar[tuple[str, ...]] = ()
    checks_silence: ClassVar[bool] = False

    min_effect: float = param(0.1, ge=0.0, lt=5.0)
    min_rate_increase: float = param(0.03, ge=0.0, lt=1.0)
    min_relative_increase: float = param(0.2, ge=0.0, lt=10.0)
    min_labels: int = param(20, ge=4)
    min_ppi_labels: int = param(10, ge=2)
    min_traces: int = param(30, ge=4)
    min_tool_calls: int = param(20, ge=4)

    def test(
        self, reference: TraceWindow, current: TraceWindow, *, now: float | None = None
    ) -> DetectorResult:
        ref, cur = self.of_sources(reference), self.of_sources(current)
        if not cur:
            return DetectorResult.insufficient(FAILURE_MODE, "no traces in the current window")
        recent = recent_half(cur)
        judges = judges_of(ref, cur)
        objectives, no_verdict = [], []
        for name in sorted((objective_names(ref) & objective_names(cur)) | set(judges)):
            for scope, traces in (("recent half", recent), ("whole window", cur)):
                row = self._objective(name, judges.get(name), ref, traces)
                if isinstance(row, str):
                    no_verdict.append({"name": name, "scope": scope, "reason": row})
                elif row is not None:
                    objectives.append({**row, "scope": scope})
                if name in judges and scope == "recent half":
                    # A judge scores a trace minutes after it ends, not hours like a
                    # label: the recent half holds its news, as for the operations.
                    stable = stable_judge_objective(name, judges[name], ref, traces,
                                                    min_effect=self.min_effect)  # fmt: skip
                    if isinstance(stable, str):
                        no_verdict.append({"name": name, "scope": scope, "reason": stable})
                    elif stable is not None:
                        objectives.append({**stable, "scope": scope})
        operations = [
            {**row, "scope": "recent half"}
            for row in (
                self._trace_errors(ref, recent),
                self._tool_loops(ref, recent),
                self._spread("latency_s", latencies(ref), latencies(recent)),
                self._spread("steps_per_trace", step_counts(ref), step_counts(recent)),
                self._spread("tokens_per_trace", token_counts(ref), token_counts(recent)),
                self._spread("cost_per_trace", costs(ref), costs(recent)),
                *self._tool_errors(ref, recent),
            )
            if row is not None
        ]
        if not objectives and not operations:
            return DetectorResult.insufficient(
                FAILURE_MODE,
                "no objective with enough labels and no operational signal with enough "
                "traces in both windows",
                labels=label_counts(ref, cur),
                objectives_without_verdict=no_verdict,
            )
        for family in (objectives, operations):
            if not family:
                continue
            holm_into(family)
            for row in family:
                # Holm at alpha / 2 within the family is Holm's p doubled, against alpha.
                row["p_adjusted"] = min(1.0, 2.0 * row["p_holm"])
                row["fired"] = bool(row["p_adjusted"] <= self.alpha and row["effect_ok"])
        rows = objectives + operations
        p_min = min(row["p_adjusted"] for row in rows)
        fired = any(row["fired"] for row in rows)
        evidence: dict[str, Any] = {
            "objectives": objectives,
            "operations": operations,
            "objectives_without_verdict": no_verdict,
            "labels": label_counts(ref, cur),
            "n_reference": len(ref),
            "n_current": len(cur),
        }
        evidence["summary"] = summary(rows, fired)
        # What moved most, fired or not: the words for an alert that a chart over several
        # runs opens while no single run is significant (app.alerts.lifecycle).
        closest = min(rows, key=lambda r: r["p_adjusted"])
        evidence["closest"] = f"{describe(closest)}, p={closest['p_adjusted']:.2g}"
        evidence["example_trace_ids"] = example_trace_ids(cur, objectives, operations)
        if fired:
            # When the most significant fired signal changed, in the whole current window:
            # an alert's "since" (app.alerts.sentences), not the window's start.
            worst = min((r for r in rows if r["fired"]), key=lambda r: r["p_adjusted"])
            started = onset(cur, worst)
            if started is not None:
                evidence["change_started_at"] = started
        return DetectorResult(
            failure_mode=FAILURE_MODE,
            statistic=float(-np.log10(max(p_min, 1e-300))),
            threshold=float(-np.log10(self.alpha)),
            p_value=float(p_min),
            fired=fired,
            evidence=evidence,
        )

    # -- sub-tests ---------------------------------------------------------------------

    def _objective(
        self, name: str, judge: str | None, ref: Sequence[TraceRecord],
        cur: Sequence[TraceRecord],
    ) -> dict[str, Any] | str | None:  # fmt: skip
        """The objective's row: the judge corrected by the labels, else the labels alone;
        with a judge but neither, why there is no verdict."""
        if judge is None:
            return self._labeled_objective(name, ref, cur)
        row = judged_objective(name, judge, ref, cur, min_ppi_labels=self.min_ppi_labels,
                               min_effect=self.min_effect)  # fmt: skip
        if not isinstance(row, str):
            return row
        labeled = self._labeled_objective(name, ref, cur)
        if labeled is not None:
            return {**labeled, "judge": judge, "judge_unused": row}
        counts = [objective_values(w, name).size for w in (ref, cur)]
        return (
            f"{row}; {min(counts)} labels are too few to test alone ({self.min_labels} "
            "needed), and a judge alone gives no verdict"
        )

    def _labeled_objective(
        self, name: str, ref: Sequence[TraceRecord], cur: Sequence[TraceRecord]
    ) -> dict[str, Any] | None:
        # FM-7's test of a true objective (one-sided Mann-Whitney, "lower"), gated here.
        shift = objective_shift(name, "true", ref, cur, min_traces=self.min_labels)
        if shift is None:
            return None
        return {
            "signal": "objective",
            "method": "labels",
            "name": name,
            "before": shift["reference_mean"],
            "after": shift["current_mean"],
            "n_reference": shift["n_reference"],
            "n_current": shift["n_current"],
            "effect": shift["effect"],
            "effect_ok": shift["effect"] >= self.min_effect,
            "p_value": shift["p_value"],
        }

    def _trace_errors(
        self, ref: Sequence[TraceRecord], cur: Sequence[TraceRecord]
    ) -> dict[str, Any] | None:
        if min(len(ref), len(cur)) < self.min_traces:
            return None
        k_cur = sum(t.status == "error" for t in cur)
        k_ref = sum(t.status == "error" for t in ref)
        return _rate_row("trace_error_rate", "traces", k_cur, len(cur), k_ref, len(ref),
                         self.min_rate_increase)  # fmt: skip

    def _tool_loops(
        self, ref: Sequence[TraceRecord], cur: Sequence[TraceRecord]
    ) -> dict[str, Any] | None:
        # Only traces derived for loops: traces stored before loops were derived would read
        # as loop-free and make any reference look better than it was.
        ref = [t for t in ref if t.loop_calls is not None]
        cur = [t for t in cur if t.loop_calls is not None]
        if min(len(ref), len(cur)) < self.min_traces:
            return None
        k_cur, k_ref = sum(t.has_loop for t in cur), sum(t.has_loop for t in ref)
        return _rate_row("loop_rate", "traces", k_cur, len(cur), k_ref, len(ref),
                         self.min_rate_increase)  # fmt: skip

    def _tool_errors(
        self, ref: Sequence[TraceRecord], cur: Sequence[TraceRecord]
    ) -> list[dict[str, Any]]:
        calls_cur, calls_ref = tool_calls(cur), tool_calls(ref)
        rows = []
        for tool in sorted(set(calls_cur) & set(calls_ref)):
            (kc, nc), (kr, nr) = calls_cur[tool], calls_ref[tool]
            if min(nc, nr) < self.min_tool_calls:
                continue
            # Tarone: even with every failure in the current window, could p reach alpha?
            if stats.hypergeom.sf(kc + kr - 1, nc + nr, kc + kr, nc) > self.alpha / 2.0:
                continue
            rows.append(
                {**_rate_row("tool_error_rate", "traces", kc, nc, kr, nr, self.min_rate_increase),
                 "name": tool}
            )  # fmt: skip
        return rows

    def _spread(self, name: str, x_ref: np.ndarray, x_cur: np.ndarray) -> dict[str, Any] | None:
        if min(x_ref.size, x_cur.size) < self.min_traces:
            return None
        med_ref, med_cur = float(np.median(x_ref)), float(np.median(x_cur))
        if np.ptp(np.concatenate([x_ref, x_cur])) == 0.0:
            return None
        rise = (med_cur - med_ref) / med_ref if med_ref > 0 else float(med_cur > 0)
        p = float(stats.mannwhitneyu(x_cur, x_ref, alternative="greater").pvalue)
        return {
            "signal": name,
            "name": name,
            "before": med_ref,
            "after": med_cur,
            "n_reference": int(x_ref.size),
            "n_current": int(x_cur.size),
            "effect": rise,
            "effect_ok": rise >= self.min_relative_increase,
            "p_value": p,
        }


def _rate_row(
    signal: str, unit: str, kc: int, nc: int, kr: int, nr: int, min_increase: float
) -> dict[str, Any]:
    p = float(stats.fisher_exact([[kc, nc - kc], [kr, nr - kr]], alternative="greater").pvalue)
    rise = kc / nc - kr / nr
    return {
        "signal": signal,
        "name": signal,
        "unit": unit,
        "before": kr / nr,
        "after": kc / nc,
        "n_reference": nr,
        "n_current": nc,
        "effect": rise,
        "effect_ok": rise >= min_increase,
        "p_value": p,
    }
