r"""Prediction-powered inference: a window's mean of a ``true`` objective from a judge on
every judged trace, corrected by the few traces that also carry a label.

A judge (an LLM-as-judge evaluator) scores ``N`` traces of a window; ``n`` of them also
carry a label of the objective the judge predicts. The judge alone is biased by whatever
bias it has; the labels alone are few. Prediction-powered inference (Angelopoulos, Bates,
Fannjiang, Jordan & Zrnic 2023, "Prediction-powered inference", Science 382) estimates the
mean from both, and its power-tuned form PPI++ (Angelopoulos, Duchi & Zrnic 2023,
arXiv:2311.01453, mean estimation) weighs the judge by

.. math::

    \hat\theta_\lambda = \lambda\,\bar f_U + \frac1n\sum_{i\in L}(y_i - \lambda f_i),\qquad
    \hat\lambda = \frac{\widehat{\mathrm{Cov}}(y, f)}{(1 + n/N_U)\,\widehat{\mathrm{Var}}(f)}
    \text{ clipped to } [0, 1],

with variance :math:`\widehat{\mathrm{Var}}(y-\lambda f)/n + \lambda^2\widehat{\mathrm{Var}}(f)/N_U`.
A biased judge moves :math:`\bar f_U` and the mean of :math:`\lambda f_i` on the labeled
traces alike, so the bias cancels; a judge that agrees with the labels makes the residuals
small and the interval narrow; :math:`\lambda = 0` is the labels alone.

**Labeled traces are a subset of the judged ones.** ``L`` is the labeled traces and ``U``
the judged traces without a label (``N_U = N - n``): the judge's mean is taken over ``U``
only, so the two terms are independent and the textbook variance holds, with the labels a
random subset of the judged traces. (The judge mean over all ``N`` judged traces is the
same estimator with :math:`\lambda` scaled by :math:`1 - n/N`; its variance would have to
carry the covariance of the two terms.) When every judged trace is labeled, ``U`` is empty
and the estimate is the labels' mean.

**Few labels.** The textbook interval covers far less than it says with ten or twenty
labels: a sample that happens to hold no disagreement with the judge claims a residual
variance near zero (an 85%-agreement judge and 10 labels: 20% of samples). With a biased
85% judge and 1% of 1,000-2,000 traces labeled it covered 0.83 for 0.95 asked; adjusted as
follows, no cell of ``bench/ppi_coverage.py`` covers under 0.94 (docs/benchmarks/ppi.md).
The residual variance is therefore estimated with
one pseudo-label each way, :math:`(y, f) = (hi, lo)` and :math:`(lo, hi)` over the scores'
range (``[0, 1]`` widened to the values seen), which for a binary judge is Bonett & Price's
(2012) adjustment for paired proportions, and the interval takes Student's t with
Welch-Satterthwaite degrees of freedom. The estimate itself is the unadjusted PPI++ one.
``adjusted=False`` gives the textbook PPI++ interval (no pseudo-labels, normal quantile).

Fewer than two labels, or no variance left to estimate, give a result with
``sufficient=False`` and a ``reason``: no interval is made up.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> y = (rng.random(1500) < 0.4).astype(float)            # true successes, rate 0.4
>>> judge = np.where(rng.random(1500) < 0.85, y, 1 - y)   # 85% agreement...
>>> judge = np.clip(judge + 0.15, 0, 1)                  # ...and lenient
>>> labeled = rng.random(1500) < 0.05
>>> est = ppi_mean(judge, judge[labeled], y[labeled])
>>> round(float(y.mean()), 3)                            # the window's true mean
0.391
>>> est.n_judged, est.n_labeled, round(est.judge_only, 3), round(est.labels_only, 3)
(1500, 72, 0.5, 0.472)
>>> round(est.estimate, 3), [round(v, 3) for v in est.interval], round(est.lam, 2)
(0.379, [0.281, 0.478], 0.72)
>>> ppi_mean(judge, judge[:1], y[:1]).reason
'fewer than 2 labels'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

__all__ = ["PPIDifference", "PPIEstimate", "ppi_difference", "ppi_mean"]


@dataclass(frozen=True)
class PPIEstimate:
    """A window's mean of an objective, by prediction-powered inference.

    ``estimate``, ``standard_error`` and ``interval`` (at ``level``) are NaN when
    ``sufficient`` is false; ``reason`` then says why. ``lam`` is the weight of the judge
    (0: labels alone). ``labels_only`` is the labels' mean and ``judge_only`` the judge's
    mean over every judged trace, for comparison. ``label_variance`` and ``judge_variance``
    are the two parts of ``standard_error ** 2`` and ``degrees_of_freedom`` their
    Welch-Satterthwaite degrees of freedom (:func:`ppi_difference` reads them).
    """

    estimate: float
    standard_error: float
    interval: tuple[float, float]
    level: float
    n_judged: int
    n_labeled: int
    lam: float
    labels_only: float
    judge_only: float
    label_variance: float = math.nan
    judge_variance: float = math.nan
    degrees_of_freedom: float = math.nan
    sufficient: bool = True
    reason: str | None = None


@dataclass(frozen=True)
class PPIDifference:
    """Current minus reference, and the one-sided p-value that the current mean is lower."""

    reference: float
    current: float
    difference: float
    standard_error: float
    statistic: float  # (reference - current) / standard_error
    degrees_of_freedom: float
    p_value: float


def ppi_mean(
    judged: ArrayLike,
    labeled_judge: ArrayLike,
    labels: ArrayLike,
    *,
    level: float = 0.95,
    lam: float | None = None,
    adjusted: bool = True,
) -> PPIEstimate:
    """The PPI++ estimate of the mean of ``labels``' objective over the judged traces.

    Parameters
    ----------
    judged : array of shape (N,)
        The judge's value on every judged trace of the window, the labeled ones included.
    labeled_judge, labels : arrays of shape (n,)
        For the judged traces that carry a label (a subset of ``judged``): the judge's value
        and the label, aligned.
    level : float, default 0.95
        The interval's coverage, in (0, 1).
    lam : float in [0, 1], optional
        A fixed weight of the judge (1: PPI, 0: labels alone); default the PPI++ power
        tuning from the data.
    adjusted : bool, default True
        Estimate the residual variance with one pseudo-label each way and take Student's t
        (the module's "Few labels"); False gives the textbook PPI++ interval.
    """
    f_all = _finite(judged, "judged")
    f_lab = _finite(labeled_judge, "labeled_judge")
    y = _finite(labels, "labels")
    if f_lab.size != y.size:
        raise ValueError(f"labeled_judge has {f_lab.size} values and labels {y.size}")
    if f_lab.size > f_all.size:
        raise ValueError("labeled traces must be a subset of the judged ones")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if lam is not None and not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1], got {lam}")
    n_all, n = f_all.size, y.size
    n_u = n_all - n
    judge_only = float(f_all.mean()) if n_all else math.nan
    labels_only = float(y.mean()) if n else math.nan

    def insufficient(reason: str) -> PPIEstimate:
        return PPIEstimate(math.nan, math.nan, (math.nan, math.nan), level, n_all, n,
                           math.nan, labels_only, judge_only, sufficient=False,
                           reason=reason)  # fmt: skip

    if n < 2:
        return insufficient("fewer than 2 labels")
    var_f = float(f_all.var(ddof=1)) if n_all > 1 else 0.0
    if lam is None:
        lam = _power_tuned(y, f_lab, var_f, n_u)
    if n_u == 0:
        lam = 0.0  # no unlabeled judged trace: the judge has nothing to add
    mean_u = (float(f_all.sum()) - float(f_lab.sum())) / n_u if n_u else 0.0
    residual = y - lam * f_lab
    estimate = lam * mean_u + float(residual.mean())
    if adjusted:
        lo = min(0.0, float(f_all.min()), float(y.min()))
        hi = max(1.0, float(f_all.max()), float(y.max()))
        residual = np.append(residual, [hi - lam * lo, lo - lam * hi])
    label_var = float(residual.var(ddof=1)) / n
    judge_var = lam**2 * var_f / n_u if n_u else 0.0
    se = math.sqrt(label_var + judge_var)
    if not se > 0.0:
        return insufficient("the labels and the judge show no variance")
    df = _satterthwaite([(label_var, n - 1), (judge_var, n_u - 1)]) if adjusted else math.inf
    half = float(stats.t.ppf(0.5 + level / 2.0, df)) * se
    return PPIEstimate(
        estimate=estimate,
        standard_error=se,
        interval=(estimate - half, estimate + half),
        level=level,
        n_judged=n_all,
        n_labeled=n,
        lam=float(lam),
        labels_only=labels_only,
        judge_only=judge_only,
        label_variance=label_var,
        judge_variance=judge_var,
        degrees_of_freedom=df,
    )


def ppi_difference(reference: PPIEstimate, current: PPIEstimate) -> PPIDifference | None:
    """One-sided test that the current window's mean is lower than the reference's.

    The windows are independent, so the difference's variance is the sum of theirs; the
    statistic is referred to Student's t with Welch-Satterthwaite degrees of freedom over
    the four variance parts, which is the normal approximation once labels are many. With
    ten labels a window the normal's tail fired 1.6 times too often at p <= 0.001 on
    stationary windows where this one stayed at or below the level (``tests/detectors/
    test_ppi.py``). None when either estimate is insufficient.

    >>> a = PPIEstimate(0.40, 0.03, (0.34, 0.46), 0.95, 1200, 60, 0.8, 0.41, 0.5,
    ...                 label_variance=0.0008, judge_variance=0.0001, degrees_of_freedom=70)
    >>> b = PPIEstimate(0.30, 0.04, (0.22, 0.38), 0.95, 1100, 55, 0.8, 0.29, 0.4,
    ...                 label_variance=0.0015, judge_variance=0.0001, degrees_of_freedom=60)
    >>> d = ppi_difference(a, b)
    >>> round(d.difference, 2), round(d.statistic, 2), round(d.p_value, 4)
    (-0.1, 2.0, 0.0239)
    """
    if not (reference.sufficient and current.sufficient):
        return None
    variance = reference.standard_error**2 + current.standard_error**2
    se = math.sqrt(variance)
    z = (reference.estimate - current.estimate) / se
    df = _satterthwaite(
        [
            (reference.label_variance, reference.n_labeled - 1),
            (reference.judge_variance, reference.n_judged - reference.n_labeled - 1),
            (current.label_variance, current.n_labeled - 1),
            (current.judge_variance, current.n_judged - current.n_labeled - 1),
        ]
    )
    return PPIDifference(
        reference=reference.estimate,
        current=current.estimate,
        difference=current.estimate - reference.estimate,
        standard_error=se,
        statistic=z,
        degrees_of_freedom=df,
        p_value=float(stats.t.sf(z, df)),
    )


def _power_tuned(y: np.ndarray, f: np.ndarray, var_f: float, n_u: int) -> float:
    """PPI++'s variance-minimising weight of the judge for a mean, clipped to [0, 1]."""
    if n_u == 0 or var_f <= 0.0:
        return 0.0
    cov = float(np.mean((y - y.mean()) * (f - f.mean()))) * y.size / (y.size - 1)
    return float(np.clip(cov / ((1.0 + y.size / n_u) * var_f), 0.0, 1.0))


def _satterthwaite(parts: list[tuple[float, int]]) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of variance estimates."""
    total = sum(v for v, _ in parts)
    denominator = sum(v * v / df for v, df in parts if v > 0.0 and df > 0)
    if denominator <= 0.0:
        return math.inf
    return total * total / denominator


def _finite(values: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} holds values that are not finite")
    return arr
