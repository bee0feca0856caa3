"""Two versions of an agent side by side: one test per measure, on the sums rollups keep.

The version comparison (issue #52, item 5) reads per-bucket rollups, not traces, so each
test here works from what a rollup holds, and says which it is:

* **rates** (trace errors, tool errors, loops, success): Fisher's exact test on the 2x2
  table of counts, two-sided (:func:`compare_rates`), the test OUTCOME runs on rates
  (one-sided there: it watches for a rise; a comparison asks about either direction);
* **means per trace** (tokens, cost): Welch's t-test from each version's count, sum and sum
  of squares (:func:`compare_means`; Welch 1947, "The generalization of Student's problem
  when several different population variances are involved"); the rollups keep
  ``tokens_sq`` and ``cost_sq`` for it. With hundreds of traces per version the mean's
  sampling distribution is near normal however skewed the costs are;
* **latency**: the Mann-Whitney U test on the two versions' DDSketch histograms
  (:func:`compare_binned`): the sketch keeps each latency only to its 1 % bin, so values in
  one bin are ties, and U is computed with its ties-corrected normal approximation
  (Lehmann 1975, *Nonparametrics*, ch. 1.4). It asks whether one version's latencies
  tend to be larger, at 1 % resolution; the p50 and p95 shown beside it come from the
  same sketches.

Every p-value is of one measure; :func:`detectors.significance.holm` adjusts them for the
several measures a comparison shows.

Examples
--------
>>> r = compare_rates("trace error rate", 30, 1000, 60, 1000)
>>> round(r.a, 3), round(r.b, 3), round(r.change, 3), r.p_value < 0.01, r.test
(0.03, 0.06, 0.03, True, 'Fisher exact')
>>> m = compare_means("tokens per trace", 1000, 2.0e6, 4.1e9, 1000, 2.2e6, 5.0e9)
>>> round(m.relative_change, 2), m.p_value < 1e-6
(0.1, True)
>>> import numpy as np
>>> same = compare_binned("latency", np.array([5, 10, 5]), np.array([5, 10, 5]))
>>> same.p_value, same.statistic
(1.0, 0.5)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class MeasureTest:
    """One measure of versions A and B: their values, B's change, and the test's answer.

    ``change`` is ``b - a`` (a rate's points as a fraction: 0.03 is 3 points);
    ``relative_change`` is ``b / a - 1`` where ``a`` is not zero; ``statistic`` is the
    test's own (the odds ratio, Welch's t, or U / (n_a n_b), the chance that B's value
    beats A's); ``p_value`` is None when either version has too little data to test.
    """

    measure: str
    a: float | None
    b: float | None
    n_a: int
    n_b: int
    change: float | None
    relative_change: float | None
    statistic: float | None
    p_value: float | None
    test: str


def _changes(a: float | None, b: float | None) -> tuple[float | None, float | None]:
    if a is None or b is None:
        return None, None
    return b - a, (b / a - 1.0 if a != 0 else None)


def compare_rates(measure: str, k_a: int, n_a: int, k_b: int, n_b: int) -> MeasureTest:
    """Two rates compared: ``k`` events out of ``n`` in each version.

    Parameters
    ----------
    measure : str
        The measure's name, carried into the result.
    k_a, n_a, k_b, n_b : int
        Events and trials of version A (the baseline) and B (the candidate).

    Returns
    -------
    MeasureTest
        The rates, B's change in points (as a fraction), the odds ratio of B against A and
        the two-sided p-value of Fisher's exact test on the 2x2 table (scipy); untested
        (p None) when a version has no trials.
    """
    a = k_a / n_a if n_a else None
    b = k_b / n_b if n_b else None
    stat = p = None
    if n_a and n_b:
        res = stats.fisher_exact([[k_b, n_b - k_b], [k_a, n_a - k_a]])
        stat, p = float(res.statistic), float(res.pvalue)
    return MeasureTest(measure, a, b, n_a, n_b, *_changes(a, b), stat, p, "Fisher exact")


def compare_means(
    measure: str, n_a: int, sum_a: float, sumsq_a: float, n_b: int, sum_b: float, sumsq_b: float
) -> MeasureTest:
    """Two means per trace compared from each version's count, sum and sum of squares.

    Parameters
    ----------
    measure : str
        The measure's name, carried into the result.
    n_a, sum_a, sumsq_a, n_b, sum_b, sumsq_b : float
        Count, sum and sum of squares of the per-trace values of A and B.

    Returns
    -------
    MeasureTest
        The means, B's change (absolute and relative), Welch's t and its two-sided p-value
        with the Welch-Satterthwaite degrees of freedom. A version with fewer than two
        traces, or two versions without any spread, is not tested (``p_value`` None;
        equal constants are reported equal, p 1). The sample variance from sums loses
        precision when the mean dwarfs the spread; per-trace tokens and dollars are far
        from that.
    """
    a = sum_a / n_a if n_a else None
    b = sum_b / n_b if n_b else None
    stat = p = None
    if n_a >= 2 and n_b >= 2 and a is not None and b is not None:
        var_a = max(0.0, (sumsq_a - n_a * a * a) / (n_a - 1))
        var_b = max(0.0, (sumsq_b - n_b * b * b) / (n_b - 1))
        se2 = var_a / n_a + var_b / n_b
        if se2 > 0:
            stat = (b - a) / math.sqrt(se2)
            df = se2**2 / ((var_a / n_a) ** 2 / (n_a - 1) + (var_b / n_b) ** 2 / (n_b - 1))
            p = float(2 * stats.t.sf(abs(stat), df))
        elif a == b:
            stat, p = 0.0, 1.0
    return MeasureTest(measure, a, b, n_a, n_b, *_changes(a, b), stat, p, "Welch t")


def compare_binned(
    measure: str, counts_a: np.ndarray, counts_b: np.ndarray,
    a: float | None = None, b: float | None = None,
) -> MeasureTest:  # fmt: skip
    """The Mann-Whitney U test of two histograms over the same ordered bins.

    Parameters
    ----------
    measure : str
        The measure's name, carried into the result.
    counts_a, counts_b : numpy.ndarray
        Counts of A's and B's values per bin, bins in increasing order (two rows of a dense
        sketch matrix, :func:`detectors.rules.sketch.accumulate`); values in a bin tie.
    a, b : float, optional
        The values to report for A and B (a quantile read from the same sketches).

    Returns
    -------
    MeasureTest
        ``statistic`` is ``U / (n_a n_b)``, the chance that a value of B exceeds one of A
        (ties half): 0.5 when neither version tends to be slower. ``p_value`` is two-sided,
        from the normal approximation with the ties correction and a continuity correction
        (scipy's ``mannwhitneyu(method="asymptotic")`` on the binned values gives the same).
    """
    ca = np.asarray(counts_a, dtype=np.float64)
    cb = np.asarray(counts_b, dtype=np.float64)
    n_a, n_b = int(ca.sum()), int(cb.sum())
    stat = p = None
    if n_a and n_b:
        below_a = np.cumsum(ca) - ca  # A's values in lower bins
        u = float((cb * (below_a + 0.5 * ca)).sum())  # pairs where B's value is larger
        n = n_a + n_b
        t = ca + cb
        tie = float((t**3 - t).sum()) / (n * (n - 1)) if n > 1 else 0.0
        var = n_a * n_b / 12.0 * ((n + 1) - tie)
        stat = u / (n_a * n_b)
        if var > 0:
            z = (abs(u - n_a * n_b / 2.0) - 0.5) / math.sqrt(var)  # continuity-corrected
            p = float(min(1.0, 2 * stats.norm.sf(max(z, 0.0))))
        else:
            p = 1.0
    return MeasureTest(measure, a, b, n_a, n_b, *_changes(a, b), stat, p, "Mann-Whitney U")
