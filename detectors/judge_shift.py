r"""A fall in a binary objective read from a judge whose error rates hold still.

Prediction-powered inference (:mod:`detectors.ppi`) is valid whatever the judge does, and
pays for it: its correction term rests on the window's own labels, and with 5% of 80
traces an hour labeled, four hours hold ~16, too few to see success fall 20 points at a
calibrated level (``docs/benchmarks/real_traffic.md``). A judge that agrees with the
labels 85% of the time has already seen every trace of those four hours.

This test reads the judge under one stated assumption: its error rates given the truth,
the true-positive rate :math:`\mathrm{TPR} = P(f = 1 \mid y = 1)` and false-positive rate
:math:`\mathrm{FPR} = P(f = 1 \mid y = 0)`, are the same in both windows (label shift:
what changes is how often the agent succeeds, not how the judge reads a success). Then
the judge's pass rate is :math:`\bar f = \mathrm{FPR} + (\mathrm{TPR} - \mathrm{FPR})\,p`,
a strictly increasing function of the success rate :math:`p` when the judge is
informative, so

* a one-sided Fisher exact test that the current window's judge pass rate is lower is a
  test that :math:`p` fell, exact at its level under the assumption, on every judged trace;
* the windows' success rates are estimated as :math:`(\bar f - \widehat{\mathrm{FPR}}) /
  (\widehat{\mathrm{TPR}} - \widehat{\mathrm{FPR}})` with the rates from the labels of both
  windows ("adjusted classify and count", Forman 2008, Data Min. Knowl. Disc. 17; the
  black-box shift estimator of Lipton, Wang & Smola 2018, ICML, for two classes).

The assumption is checked, not taken on faith: the labeled judged traces of each window
give the judge's rates on successes and on failures separately, and a two-sided Fisher
test per class (Bonferroni over the two) at ``stability_level`` finding them moved gives no
row, with the reason. Conditioning on the label matters: a judge right on 90% of
successes and 70% of failures disagrees more often when failures rise, which is the
regression itself, not a judge that changed. A judge that changes without the labels of
the window showing it (few labels, a slow drift) is what the JUDGE monitor watches over
its longer windows; a judge that starts passing failures raises its pass rate and cannot
fire this one-sided test.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> def window(n, p):
...     y = (rng.random(n) < p).astype(float)
...     f = np.where(rng.random(n) < 0.85, y, 1 - y)
...     labeled = rng.random(n) < 0.05
...     return f, f[labeled], y[labeled]
>>> s = judge_shift(window(1900, 0.40), window(320, 0.20))
>>> round(s.judge_before, 2), round(s.judge_after, 2), round(s.before, 2), round(s.after, 2)
(0.44, 0.31, 0.41, 0.24)
>>> s.n_labels, s.n_labels_current, f"{s.p_value:.1g}"
(112, 20, '4e-06')
>>> judge_shift(window(1900, 0.40), window(320, 0.40)).p_value > 0.05
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["JudgeShift", "judge_shift"]

THRESHOLD = 0.5  # a judge value or label at least this is a pass (detectors.judge_agreement)
Window = tuple[np.ndarray, np.ndarray, np.ndarray]  # judged, labeled_judge, labels


@dataclass(frozen=True)
class JudgeShift:
    """The judge's pass rates, the success rates they imply, and the test.

    ``true_positive``/``false_positive`` are the judge's rates on the pooled labels of both
    windows; ``stability_p`` the Bonferroni-adjusted p-value that they differ between the
    windows; ``p_value`` the one-sided Fisher p-value that the judge passes fewer traces
    in the current window.
    """

    judge_before: float
    judge_after: float
    before: float
    after: float
    true_positive: float
    false_positive: float
    n_labels: int
    n_labels_current: int
    n_judged_reference: int
    n_judged_current: int
    stability_p: float
    p_value: float


def judge_shift(
    reference: Window,
    current: Window,
    *,
    min_labels: int = 30,
    min_class_labels: int = 5,
    min_current_labels: int = 5,
    min_informedness: float = 0.3,
    stability_level: float = 0.05,
) -> JudgeShift | str:
    """The test of a fall in a binary objective from the judge's pass rates, or why none.

    Parameters
    ----------
    reference, current : (judged, labeled_judge, labels)
        Per window: the judge's value on every judged trace, and for the judged traces
        that carry a label, the judge's value and the label, aligned.
    min_labels : int
        Fewest labeled judged traces over both windows to estimate the judge's rates.
    min_class_labels : int
        Fewest of them that are successes, and that are failures.
    min_current_labels : int
        Fewest in the current window, to check the rates held there.
    min_informedness : float
        Smallest TPR - FPR: below it the judge says too little about the truth.
    stability_level : float
        Level of the check that the judge's rates held.
    """
    (f_ref, lf_ref, y_ref), (f_cur, lf_cur, y_cur) = reference, current
    labels = np.concatenate([y_ref, y_cur])
    if labels.size and not np.isin(labels, (0.0, 1.0)).all():
        return "the objective is not pass/fail"
    if y_cur.size < min_current_labels:
        return (f"{y_cur.size} labeled judged traces in the current window "
                f"({min_current_labels} needed to check the judge held)")  # fmt: skip
    if labels.size < min_labels:
        return f"{labels.size} labeled judged traces ({min_labels} needed to read the judge)"
    passes = np.concatenate([lf_ref, lf_cur]) >= THRESHOLD
    ok, bad = labels >= THRESHOLD, labels < THRESHOLD
    if min(ok.sum(), bad.sum()) < min_class_labels:
        return (f"the labels hold {int(ok.sum())} successes and {int(bad.sum())} failures "
                f"({min_class_labels} of each needed)")  # fmt: skip
    tpr, fpr = float(passes[ok].mean()), float(passes[bad].mean())
    if tpr - fpr < min_informedness:
        return (f"the judge passes {tpr:.0%} of successes and {fpr:.0%} of failures: too "
                "little to read the objective from")  # fmt: skip
    stability_p = _rates_moved(lf_ref, y_ref, lf_cur, y_cur)
    if stability_p < stability_level:
        return (f"the judge's error rates moved between the windows (p={stability_p:.2g}): "
                "its pass rate alone does not read the objective")  # fmt: skip
    k_ref, k_cur = int((f_ref >= THRESHOLD).sum()), int((f_cur >= THRESHOLD).sum())
    n_ref, n_cur = f_ref.size, f_cur.size
    table = [[k_ref, n_ref - k_ref], [k_cur, n_cur - k_cur]]
    p = float(stats.fisher_exact(table, alternative="greater").pvalue)
    rate_ref, rate_cur = k_ref / n_ref, k_cur / n_cur
    return JudgeShift(
        judge_before=rate_ref,
        judge_after=rate_cur,
        before=_success(rate_ref, tpr, fpr),
        after=_success(rate_cur, tpr, fpr),
        true_positive=tpr,
        false_positive=fpr,
        n_labels=int(labels.size),
        n_labels_current=int(y_cur.size),
        n_judged_reference=n_ref,
        n_judged_current=n_cur,
        stability_p=stability_p,
        p_value=p,
    )


def _success(pass_rate: float, tpr: float, fpr: float) -> float:
    return float(np.clip((pass_rate - fpr) / (tpr - fpr), 0.0, 1.0))


def _rates_moved(lf_ref: np.ndarray, y_ref: np.ndarray, lf_cur: np.ndarray,
                 y_cur: np.ndarray) -> float:  # fmt: skip
    """Bonferroni over the two classes of a two-sided Fisher test that the judge's pass
    rate on that class differs between the windows (1.0 where a window lacks the class)."""
    ps = []
    for cls in (True, False):
        a = lf_ref[(y_ref >= THRESHOLD) == cls] >= THRESHOLD
        b = lf_cur[(y_cur >= THRESHOLD) == cls] >= THRESHOLD
        if a.size and b.size:
            table = [[int(a.sum()), int(a.size - a.sum())], [int(b.sum()), int(b.size - b.sum())]]
            ps.append(float(stats.fisher_exact(table).pvalue))
    return min(1.0, len(ps) * min(ps)) if ps else 1.0
