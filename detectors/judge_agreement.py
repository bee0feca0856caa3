r"""How well a judge agrees with the labels, on the traces that carry both; and whether that
agreement fell against the baseline window.

A judge (an LLM-as-judge evaluator) is a measurement instrument: its agreement with the
labels of the objective it predicts is what lets an on-call engineer trust it, and what
:mod:`detectors.ppi` leans on. Two shapes of objective:

* **binary** (every label is 0 or 1): labels and judge values are read as a pass when at
  least ``threshold`` (0.5, the middle of a 0-1 score). Accuracy with its Wilson (1927) score
  interval; Cohen's (1960) :math:`\kappa` with the large-sample standard error of Fleiss,
  Cohen & Everitt (1969, Psychological Bulletin 72(5)); the 2 x 2 confusion matrix; and the
  bias, the mean judge value minus the mean label (raw values, not thresholded: the bias
  that moves a judge-only estimate), with a t interval on the paired differences.
* **continuous**: mean absolute error, the bias with its interval, and Spearman's
  :math:`\rho`.

:func:`agreement_fell` is the calibrated test that the judge agrees less than it did in the
reference window: for a binary objective, one-sided Fisher exact tests that the current
disagreement rate is higher, on all labels, on the successes and on the failures, with
Bonferroni over the three (exact, so at most ``alpha`` on stationary windows; a judge that
turns lenient errs only on failures, where its rise is not diluted by the successes), gated
on a rise of at least ``min_effect`` in the class that moved most; for a continuous one, a one-sided Mann-Whitney U test on
the absolute errors, gated on a rise of the mean absolute error of at least ``min_effect``.

Examples
--------
>>> labels = [1, 1, 1, 0, 0, 0, 1, 0, 1, 1]
>>> judge = [0.9, 0.8, 0.2, 0.1, 0.6, 0.0, 1.0, 0.3, 0.7, 0.9]
>>> a = binary_agreement(labels, judge)
>>> a.n, a.accuracy, a.confusion
(10, 0.8, ((3, 1), (1, 5)))
>>> round(a.kappa, 3), round(a.kappa_standard_error, 3), round(a.bias, 2)
(0.583, 0.262, -0.05)
>>> [round(v, 3) for v in a.accuracy_interval]
[0.49, 0.943]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from detectors.result import DetectorResult

__all__ = [
    "BinaryAgreement",
    "ContinuousAgreement",
    "JudgedLabels",
    "agreement_fell",
    "binary_agreement",
    "continuous_agreement",
    "judge_agreement",
]

FAILURE_MODE = "JUDGE"
THRESHOLD = 0.5


@dataclass(frozen=True)
class BinaryAgreement:
    """A judge against binary labels; ``confusion[label][judge]`` counts traces (0 = fail).

    ``kappa`` and its standard error and interval are None when both raters give one
    category only (chance agreement 1: kappa is undefined).
    """

    n: int
    accuracy: float
    accuracy_interval: tuple[float, float]
    kappa: float | None
    kappa_standard_error: float | None
    kappa_interval: tuple[float, float] | None
    confusion: tuple[tuple[int, int], tuple[int, int]]
    bias: float
    bias_interval: tuple[float, float]
    threshold: float = THRESHOLD


@dataclass(frozen=True)
class ContinuousAgreement:
    """A judge against continuous labels; ``spearman`` is None when either is constant."""

    n: int
    mean_absolute_error: float
    bias: float
    bias_interval: tuple[float, float]
    spearman: float | None


@dataclass(frozen=True)
class JudgedLabels:
    """One window's traces that carry both a label and the judge's value, aligned."""

    labels: ArrayLike
    judge: ArrayLike


def is_binary(labels: ArrayLike) -> bool:
    """Every label is 0 or 1."""
    y = np.asarray(labels, dtype=float)
    return bool(y.size) and bool(np.isin(y, (0.0, 1.0)).all())


def judge_agreement(
    labels: ArrayLike, judge: ArrayLike, *, threshold: float = THRESHOLD, level: float = 0.95
) -> BinaryAgreement | ContinuousAgreement | None:
    """:func:`binary_agreement` when every label is 0 or 1, else :func:`continuous_agreement`."""
    if is_binary(labels):
        return binary_agreement(labels, judge, threshold=threshold, level=level)
    return continuous_agreement(labels, judge, level=level)


def binary_agreement(
    labels: ArrayLike, judge: ArrayLike, *, threshold: float = THRESHOLD, level: float = 0.95
) -> BinaryAgreement | None:
    """Accuracy, Cohen's kappa, confusion matrix and bias; None with fewer than 2 pairs."""
    y, f = _pairs(labels, judge)
    if y.size < 2:
        return None
    yb, fb = y >= threshold, f >= threshold
    table = np.array([[np.sum(~yb & ~fb), np.sum(~yb & fb)], [np.sum(yb & ~fb), np.sum(yb & fb)]])
    n = y.size
    z = float(stats.norm.ppf(0.5 + level / 2.0))
    accuracy = float(np.trace(table)) / n
    kappa, se = _cohen_kappa(table / n, n)
    kappa_interval = None if kappa is None or se is None else (kappa - z * se, kappa + z * se)
    return BinaryAgreement(
        n=n,
        accuracy=accuracy,
        accuracy_interval=_wilson(accuracy, n, z),
        kappa=kappa,
        kappa_standard_error=se,
        kappa_interval=kappa_interval,
        confusion=((int(table[0, 0]), int(table[0, 1])), (int(table[1, 0]), int(table[1, 1]))),
        bias=float(np.mean(f - y)),
        bias_interval=_mean_interval(f - y, level),
        threshold=threshold,
    )


def continuous_agreement(
    labels: ArrayLike, judge: ArrayLike, *, level: float = 0.95
) -> ContinuousAgreement | None:
    """Mean absolute error, bias and Spearman's rho; None with fewer than 2 pairs."""
    y, f = _pairs(labels, judge)
    if y.size < 2:
        return None
    rho = None
    if np.ptp(y) > 0 and np.ptp(f) > 0:
        rho = float(stats.spearmanr(y, f).statistic)
    return ContinuousAgreement(
        n=int(y.size),
        mean_absolute_error=float(np.mean(np.abs(f - y))),
        bias=float(np.mean(f - y)),
        bias_interval=_mean_interval(f - y, level),
        spearman=rho,
    )


def agreement_fell(
    reference: JudgedLabels,
    current: JudgedLabels,
    *,
    alpha: float = 0.01,
    min_effect: float = 0.05,
    min_pairs: int = 20,
    threshold: float = THRESHOLD,
    judge: str = "judge",
) -> DetectorResult:
    """Did the judge agree less with the labels in ``current`` than in ``reference``?

    Binary objective: fires when the one-sided Fisher exact p-value that the current
    disagreement rate is higher is at most ``alpha`` and the rate rose by at least
    ``min_effect``. Continuous: one-sided Mann-Whitney U on the absolute errors, gated on
    the mean absolute error's rise. Fewer than ``min_pairs`` pairs in either window give
    ``insufficient_data``. ``judge`` names the judge in the summary.

    >>> rng = np.random.default_rng(1)
    >>> y_ref, y_cur = rng.random(300) < 0.4, rng.random(200) < 0.4
    >>> ref = JudgedLabels(y_ref, np.where(rng.random(300) < 0.9, y_ref, ~y_ref))
    >>> cur = JudgedLabels(y_cur, np.where(rng.random(200) < 0.75, y_cur, ~y_cur))
    >>> r = agreement_fell(ref, cur, judge="resolved")
    >>> r.fired, r.evidence["summary"]
    (True, 'judge resolved agreed with 73.0% of 200 labels (reference 88.3% of 300), p=3.5e-05')
    """
    y_ref, f_ref = _pairs(reference.labels, reference.judge)
    y_cur, f_cur = _pairs(current.labels, current.judge)
    if min(y_ref.size, y_cur.size) < min_pairs:
        return DetectorResult.insufficient(
            FAILURE_MODE,
            f"fewer than {min_pairs} traces with both a label and the judge in a window",
            n_reference=int(y_ref.size), n_current=int(y_cur.size),
        )  # fmt: skip
    evidence: dict[str, Any] = {"judge": judge, "n_reference": int(y_ref.size),
                                "n_current": int(y_cur.size)}  # fmt: skip
    if is_binary(y_ref) and is_binary(y_cur):
        p, rise, words, found = _binary_fell(y_ref, f_ref, y_cur, f_cur, threshold, judge)
        evidence.update(measure="accuracy", **found)
    else:
        e_ref, e_cur = np.abs(f_ref - y_ref), np.abs(f_cur - y_cur)
        p = 1.0
        if np.ptp(np.concatenate([e_ref, e_cur])) > 0:
            p = float(stats.mannwhitneyu(e_cur, e_ref, alternative="greater").pvalue)
        before, after = float(e_ref.mean()), float(e_cur.mean())
        rise = after - before
        evidence.update(measure="mean_absolute_error", before=before, after=after)
        words = (f"judge {judge}'s mean absolute error {after:.3g} on {y_cur.size} labels "
                 f"(reference {before:.3g} on {y_ref.size})")  # fmt: skip
    fired = p <= alpha and rise >= min_effect
    evidence.update(effect=rise, effect_ok=rise >= min_effect, summary=f"{words}, p={p:.2g}")
    return DetectorResult.on_log_p(
        FAILURE_MODE, p_value=p, alpha=alpha, fired=fired, evidence=evidence
    )


def _binary_fell(
    y_ref: np.ndarray, f_ref: np.ndarray, y_cur: np.ndarray, f_cur: np.ndarray,
    threshold: float, judge: str,
) -> tuple[float, float, str, dict[str, Any]]:  # fmt: skip
    """One-sided Fisher tests that the judge errs more: on all labels, on the successes
    (it fails more of them) and on the failures (it passes more of them); Bonferroni over
    the three. A judge that turns lenient errs only on failures: read on all labels its
    rise is diluted by the successes, on the failures alone it is whole."""
    ok_ref, ok_cur = y_ref >= threshold, y_cur >= threshold
    wrong_ref, wrong_cur = ok_ref != (f_ref >= threshold), ok_cur != (f_cur >= threshold)
    parts = []
    for name, m_ref, m_cur in (("labels", slice(None), slice(None)),
                               ("successes", ok_ref, ok_cur), ("failures", ~ok_ref, ~ok_cur)):  # fmt: skip
        a, b = wrong_ref[m_ref], wrong_cur[m_cur]
        if a.size and b.size:
            table = [[int(b.sum()), int(b.size - b.sum())], [int(a.sum()), int(a.size - a.sum())]]
            p = float(stats.fisher_exact(table, alternative="greater").pvalue)
            parts.append((p, name, 1.0 - float(a.mean()), 1.0 - float(b.mean()), a.size, b.size))
    best = min(parts)
    p = min(1.0, len(parts) * best[0])
    _, name, before, after, n_ref, n_cur = best
    overall = parts[0]
    found = {"before": overall[2], "after": overall[3], "worst_class": name,
             "class_before": before, "class_after": after}  # fmt: skip
    if name == "labels":
        words = (f"judge {judge} agreed with {after:.1%} of {n_cur} labels "
                 f"(reference {before:.1%} of {n_ref})")  # fmt: skip
    else:
        verb = "passed" if name == "successes" else "failed"
        words = (f"judge {judge} {verb} {after:.1%} of {n_cur} labeled {name} "
                 f"(reference {before:.1%} of {n_ref}; {overall[3]:.1%} agreement on all "
                 f"{overall[5]} labels)")  # fmt: skip
    return p, before - after, words, found


def _cohen_kappa(p: np.ndarray, n: int) -> tuple[float | None, float | None]:
    """Cohen's kappa of a joint proportion table and its Fleiss-Cohen-Everitt (1969) SE."""
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    p_o, p_e = float(np.trace(p)), float(rows @ cols)
    if p_e >= 1.0:
        return None, None
    kappa = (p_o - p_e) / (1.0 - p_e)
    k = p.shape[0]
    diagonal = sum(p[i, i] * (1.0 - (rows[i] + cols[i]) * (1.0 - kappa)) ** 2 for i in range(k))
    off = sum(p[i, j] * (cols[i] + rows[j]) ** 2 for i in range(k) for j in range(k) if i != j)
    variance = (diagonal + (1.0 - kappa) ** 2 * off - (kappa - p_e * (1.0 - kappa)) ** 2) / (
        n * (1.0 - p_e) ** 2
    )
    return float(kappa), float(math.sqrt(max(variance, 0.0)))


def _wilson(p: float, n: int, z: float) -> tuple[float, float]:
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def _mean_interval(d: np.ndarray, level: float) -> tuple[float, float]:
    mean, se = float(d.mean()), float(d.std(ddof=1)) / math.sqrt(d.size)
    half = float(stats.t.ppf(0.5 + level / 2.0, d.size - 1)) * se
    return (mean - half, mean + half)


def _pairs(labels: ArrayLike, judge: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(labels, dtype=float).ravel()
    f = np.asarray(judge, dtype=float).ravel()
    if y.size != f.size:
        raise ValueError(f"labels has {y.size} values and judge {f.size}")
    keep = np.isfinite(y) & np.isfinite(f)
    return y[keep], f[keep]
