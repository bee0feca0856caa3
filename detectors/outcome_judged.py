"""OUTCOME's test of an objective a judge predicts: the judge corrected by the labels.

An online evaluator's score that predicts a ``true`` objective (:attr:`Score.predicts`)
covers most traces; the objective's labels cover a few. When both windows hold at least
``min_ppi_labels`` labeled traces that the judge also scored, the objective row compares
the windows' prediction-powered estimates of the objective's mean (:func:`detectors.ppi.
ppi_mean`, one-sided :func:`detectors.ppi.ppi_difference`): a judge that is biased, or
whose bias moves, cannot move them, and the judge's coverage narrows them. The labels are
taken as a random subset of the judged traces (the judge samples traces without regard to
whether they will be labeled).

With fewer such labels the row falls back on the labels alone (OUTCOME's Mann-Whitney
test) when each window holds ``min_labels`` of them, and otherwise gives no verdict, with
the reason: a judge alone never alerts. Several judges predicting one objective: the one
that scored the most traces in both windows is used (ties by name).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from detectors.judge_agreement import binary_agreement, continuous_agreement, is_binary
from detectors.judge_shift import judge_shift
from detectors.outcome_values import OBJECTIVE_KINDS, objective_values, predicted_objectives
from detectors.ppi import PPIEstimate, ppi_difference, ppi_mean
from detectors.records import TraceRecord

# How far a window's labels must lean toward a fall before a stable judge's pass rate
# speaks for them (stable_judge_objective).
LABELS_LEAN = 0.2


@dataclass(frozen=True)
class JudgedWindow:
    """One window's judge values (every judged trace) and its labeled, judged traces."""

    judged: np.ndarray
    labeled_judge: np.ndarray
    labels: np.ndarray


def judges_of(ref: Sequence[TraceRecord], cur: Sequence[TraceRecord]) -> dict[str, str]:
    """Objective -> the judge predicting it that scored the most traces in both windows
    (the fewer of its two counts; ties by name)."""
    judged_ref, judged_cur = predicted_objectives(ref), predicted_objectives(cur)
    out = {}
    for objective in set(judged_ref) & set(judged_cur):
        counts_ref, counts_cur = judged_ref[objective], judged_cur[objective]
        both = set(counts_ref) & set(counts_cur)
        if both:
            out[objective] = min(both, key=lambda j: (-min(counts_ref[j], counts_cur[j]), j))
    return out


def judge_value(t: TraceRecord, judge: str, objective: str) -> float | None:
    """The latest value of ``judge``'s prediction of ``objective`` on trace ``t``."""
    return _latest(t, lambda s: s.name == judge and s.predicts == objective)


def judged_window(traces: Sequence[TraceRecord], objective: str, judge: str) -> JudgedWindow:
    judged, labeled_judge, labels = [], [], []
    for t in traces:
        f = judge_value(t, judge, objective)
        if f is None or not np.isfinite(f):
            continue
        judged.append(f)
        y = _latest(
            t, lambda s: s.name == objective and s.kind in OBJECTIVE_KINDS and s.predicts is None
        )
        if y is not None and np.isfinite(y):
            labeled_judge.append(f)
            labels.append(y)
    return JudgedWindow(*(np.asarray(v, dtype=float) for v in (judged, labeled_judge, labels)))


def judged_objective(
    name: str,
    judge: str,
    ref: Sequence[TraceRecord],
    cur: Sequence[TraceRecord],
    *,
    min_ppi_labels: int,
    min_effect: float,
) -> dict[str, Any] | str:
    """The PPI row of objective ``name`` corrected from ``judge``, or why there is none."""
    w_ref, w_cur = judged_window(ref, name, judge), judged_window(cur, name, judge)
    few = [(w, window) for w, window in ((w_ref, "reference"), (w_cur, "current"))
           if w.labels.size < min_ppi_labels]  # fmt: skip
    if few:
        w, window = few[0]
        return (
            f"judge {judge} scored {w.judged.size:,} traces of the {window} window but "
            f"{w.labels.size} of them carry a label ({min_ppi_labels} needed to correct it)"
        )
    e_ref, e_cur = (ppi_mean(w.judged, w.labeled_judge, w.labels) for w in (w_ref, w_cur))
    diff = ppi_difference(e_ref, e_cur)
    if diff is None:
        return f"judge {judge}: {e_cur.reason or e_ref.reason}"
    fall = e_ref.estimate - e_cur.estimate
    spread = _pooled_sd(objective_values(ref, name), objective_values(cur, name))
    effect = fall / spread if spread > 0 else 0.0
    measure, agreement = _agreement(w_cur)
    return {
        "signal": "objective",
        "method": "ppi",
        "name": name,
        "judge": judge,
        "before": e_ref.estimate,
        "after": e_cur.estimate,
        "n_reference": e_ref.n_labeled,
        "n_current": e_cur.n_labeled,
        "n_judged_reference": e_ref.n_judged,
        "n_judged_current": e_cur.n_judged,
        **_sides("interval", e_ref, e_cur, lambda e: [e.interval[0], e.interval[1]]),
        **_sides("lambda", e_ref, e_cur, lambda e: e.lam),
        **_sides("judge_only", e_ref, e_cur, lambda e: e.judge_only),
        **_sides("labels_only", e_ref, e_cur, lambda e: e.labels_only),
        "agreement_measure": measure,
        "agreement": agreement,
        "effect": effect,
        "effect_ok": effect >= min_effect,
        "p_value": diff.p_value,
    }


def stable_judge_objective(
    name: str,
    judge: str,
    ref: Sequence[TraceRecord],
    cur: Sequence[TraceRecord],
    *,
    min_effect: float,
) -> dict[str, Any] | str | None:
    """The row of a pass/fail objective read from the judge's pass rates while its error
    rates hold (:func:`detectors.judge_shift.judge_shift`), or why there is none; None
    where the labels reach most judged traces (the labels then speak for themselves)."""
    w_ref, w_cur = judged_window(ref, name, judge), judged_window(cur, name, judge)
    if w_cur.labels.size * 2 >= max(w_cur.judged.size, 1):
        return None
    found = judge_shift(
        (w_ref.judged, w_ref.labeled_judge, w_ref.labels),
        (w_cur.judged, w_cur.labeled_judge, w_cur.labels),
    )
    if isinstance(found, str):
        return f"judge {judge} alone: {found}"
    # The window's own labels must lean the same way (the PPI estimate fell, one-sided
    # p <= LABELS_LEAN): a judge turned harsher that the labels' class-by-class check is
    # too few to catch then still needs the labels' assent before its pass rate speaks.
    e_ref, e_cur = (ppi_mean(w.judged, w.labeled_judge, w.labels) for w in (w_ref, w_cur))
    lean = ppi_difference(e_ref, e_cur)
    if lean is not None and lean.p_value > LABELS_LEAN:
        return (
            f"judge {judge} alone: its pass rate {found.judge_before:.0%} -> "
            f"{found.judge_after:.0%}, but the {w_cur.labels.size} labels of the window do "
            f"not lean toward a fall (p={lean.p_value:.2g})"
        )
    spread = _pooled_sd(objective_values(ref, name), objective_values(cur, name))
    effect = (found.before - found.after) / spread if spread > 0 else 0.0
    return {
        "signal": "objective",
        "method": "judge_stable",
        "name": name,
        "judge": judge,
        "before": found.before,
        "after": found.after,
        "judge_before": found.judge_before,
        "judge_after": found.judge_after,
        "true_positive": found.true_positive,
        "false_positive": found.false_positive,
        "n_labels": found.n_labels,
        "n_labels_current": found.n_labels_current,
        "n_reference": found.n_judged_reference,
        "n_current": found.n_judged_current,
        "stability_p": found.stability_p,
        "labels_lean_p": None if lean is None else lean.p_value,
        "effect": effect,
        "effect_ok": effect >= min_effect,
        "p_value": found.p_value,
    }


def describe_stable(row: dict[str, Any], *, arrow: str = "->") -> str:
    """The words of a stable-judge row: the estimate, the judge's pass rates it comes from,
    and the labels that show the judge's error rates held."""
    return (
        f"{row['name']} estimated {row['before']:.2f} {arrow} {row['after']:.2f} from judge "
        f"{row['judge']}'s pass rate {row['judge_before']:.0%} {arrow} {row['judge_after']:.0%} "
        f"on {row['n_current']:,} traces, if its error rates hold (on {row['n_labels']:,} "
        f"labels it passes {row['true_positive']:.0%} of successes and "
        f"{row['false_positive']:.0%} of failures; the window's {row['n_labels_current']:,} "
        "agree)"
    )


def describe_judged(row: dict[str, Any]) -> str:
    """The words of a PPI row: the estimates, the judge's coverage and the correction."""
    if row["agreement"] is None:
        trust = "judge agreement unknown"
    elif row["agreement_measure"] == "accuracy":
        trust = f"judge agreement {row['agreement']:.2f}"
    else:
        trust = f"judge mean absolute error {row['agreement']:.3g}"
    return (
        f"{row['name']} estimated {row['before']:.2f} -> {row['after']:.2f} (judge "
        f"{row['judge']} on {row['n_judged_current']:,} traces, corrected by "
        f"{row['n_current']:,} labels; {trust})"
    )


def _agreement(w: JudgedWindow) -> tuple[str, float | None]:
    if is_binary(w.labels):
        binary = binary_agreement(w.labels, w.labeled_judge)
        return "accuracy", None if binary is None else binary.accuracy
    continuous = continuous_agreement(w.labels, w.labeled_judge)
    return "mean_absolute_error", None if continuous is None else continuous.mean_absolute_error


def _sides(key: str, e_ref: PPIEstimate, e_cur: PPIEstimate, read: Any) -> dict[str, Any]:
    return {f"{key}_reference": read(e_ref), f"{key}_current": read(e_cur)}


def _pooled_sd(x_ref: np.ndarray, x_cur: np.ndarray) -> float:
    parts = [x.var(ddof=1) for x in (x_ref, x_cur) if x.size > 1]
    return float(np.sqrt(np.mean(parts))) if parts else 0.0


def _latest(t: TraceRecord, keep: Any) -> float | None:
    found = [s for s in t.scores if keep(s)]
    return max(found, key=lambda s: s.created_at).value if found else None
