"""Mantel-Haenszel statistics over depth strata: the risk ratio FM-1 compounds and the
Cochran-Mantel-Haenszel test of ratio 1.

Counts come as ``(a, n1, c, n0)`` per stratum: ``a`` errors among ``n1`` exposed steps,
``c`` among ``n0`` unexposed. References: Mantel & Haenszel (1959), "Statistical aspects
of the analysis of data from retrospective studies of disease", JNCI 22(4).
"""

from __future__ import annotations

import numpy as np
from scipy import stats


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


def cmh_greater(sums: np.ndarray) -> float:
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
