r"""Judge drift: an LLM judge that agrees less with the labels than it did.

A judge's score is what online evaluators write on every trace, and what the prediction-
powered estimates of OUTCOME lean on (:mod:`detectors.outcome_judged`). A judge can change
under a team's feet (the model behind its endpoint was updated, a prompt was edited) or
the agent can change in a way the judge misreads; either way its agreement with the
labels of the objective it predicts falls. The PPI estimate stays valid (its correction
follows the judge's new bias), but the judge is no longer the instrument it was, and an
on-call engineer should know.

For every judge score that predicts an objective (:attr:`detectors.records.Score.predicts`)
in both windows, the traces that carry both the judge's value and a label are compared
with :func:`detectors.judge_agreement.agreement_fell` (a one-sided Fisher exact test on
the disagreement rate for a 0/1 objective, Mann-Whitney U on the absolute errors
otherwise, gated on ``min_effect``); Holm over the judges keeps the family at ``alpha``.
``statistic`` is :math:`-\log_{10}` of the smallest adjusted p-value, ``threshold``
:math:`-\log_{10}\alpha`. Fewer than ``min_pairs`` judged, labeled traces in a window give
no verdict on that judge.

Parameters
----------
alpha : float, default 0.01
min_effect : float, default 0.05
    Smallest fall of agreement (accuracy) or rise of the mean absolute error.
min_pairs : int, default 20
    Fewest traces with both a label and the judge's value in each window.

Examples
--------
>>> import numpy as np
>>> from detectors.records import Score, TraceRecord
>>> rng = np.random.default_rng(0)
>>> def window(start, n, agreement):
...     out = []
...     for i in range(n):
...         y = float(rng.random() < 0.4)
...         f = y if rng.random() < agreement else 1.0 - y
...         out.append(TraceRecord(f"t{start + i}", "agent", started_at=float(start + i),
...                                scores=(Score("resolved", f, predicts="task_success"),
...                                        Score("task_success", y, "true", "human"))))
...     return out
>>> det = JudgeDriftDetector()
>>> det.test(window(0, 300, 0.9), window(1000, 200, 0.9)).fired
False
>>> r = det.test(window(0, 300, 0.9), window(1000, 200, 0.7))
>>> r.fired, r.evidence["summary"]
(True, 'judge resolved agreed with 72.0% of 200 task_success labels (reference 88.0% of 300), p=1.9e-05')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from detectors.judge_agreement import FAILURE_MODE, JudgedLabels, agreement_fell
from detectors.outcome_judged import judged_window
from detectors.outcome_values import predicted_objectives
from detectors.params import Parameters, TraceSources, param
from detectors.records import DetectorResult, TraceWindow
from detectors.significance import holm_into


@dataclass(frozen=True, kw_only=True)
class JudgeDriftDetector(TraceSources, Parameters):
    """Does any judge agree less with the labels of its objective than it did?"""

    needs: ClassVar[tuple[str, ...]] = ("true_scores",)
    window_counts: ClassVar[tuple[str, ...]] = ()
    checks_silence: ClassVar[bool] = False

    min_effect: float = param(0.05, ge=0.0, lt=1.0)
    min_pairs: int = param(20, ge=4)

    def test(
        self, reference: TraceWindow, current: TraceWindow, *, now: float | None = None
    ) -> DetectorResult:
        ref, cur = self.of_sources(reference), self.of_sources(current)
        judged_ref, judged_cur = predicted_objectives(ref), predicted_objectives(cur)
        pairs = sorted(
            (objective, judge)
            for objective in set(judged_ref) & set(judged_cur)
            for judge in set(judged_ref[objective]) & set(judged_cur[objective])
        )
        if not pairs:
            return DetectorResult.insufficient(
                FAILURE_MODE, "no judge score predicts an objective in both windows"
            )
        rows: list[dict[str, Any]] = []
        waiting: list[str] = []
        for objective, judge in pairs:
            w_ref, w_cur = judged_window(ref, objective, judge), judged_window(cur, objective, judge)
            result = agreement_fell(
                JudgedLabels(w_ref.labels, w_ref.labeled_judge),
                JudgedLabels(w_cur.labels, w_cur.labeled_judge),
                alpha=self.alpha, min_effect=self.min_effect, min_pairs=self.min_pairs,
                judge=judge,
            )  # fmt: skip
            if result.status != "ok" or result.p_value is None:
                waiting.append(
                    f"judge {judge}: {w_ref.labels.size} and {w_cur.labels.size} judged traces "
                    f"carry a {objective} label ({self.min_pairs} needed in each window)"
                )
                continue
            ev = result.evidence
            summary = str(ev["summary"]).replace(" labels ", f" {objective} labels ", 1)
            rows.append({**ev, "objective": objective, "summary": summary,
                         "p_value": result.p_value})  # fmt: skip
        if not rows:
            return DetectorResult.insufficient(FAILURE_MODE, "; ".join(waiting))
        adjusted = holm_into(rows)
        for row, p in zip(rows, adjusted, strict=True):
            row["fired"] = bool(p <= self.alpha and row.get("effect_ok", True))
        worst = min(rows, key=lambda r: r["p_holm"])
        fired = any(r["fired"] for r in rows)
        return DetectorResult.on_log_p(
            FAILURE_MODE, p_value=float(worst["p_holm"]), alpha=self.alpha, fired=fired,
            evidence={"judges": rows, "summary": worst["summary"], "waiting": waiting,
                      "n_reference": worst["n_reference"], "n_current": worst["n_current"]},
        )  # fmt: skip
