"""Kernel two-sample test: unbiased MMD² with an RBF kernel and a permutation test.

MMD²_u (Gretton et al. 2012, JMLR 13, eq. 3) with k(x, y) = exp(−|x − y|²/(2σ²)) and σ the
median pairwise distance of the pooled sample (median heuristic). The pooled kernel
matrix K is computed once; for a group-indicator vector a (b = 1 − a), with r = K1 and
T = 1ᵀK1 every permuted statistic needs only aᵀKa and aᵀr:
    Σ_XX = aᵀKa,  Σ_XY = aᵀr − aᵀKa,  Σ_YY = T − 2aᵀr + aᵀKa,
so all permutations cost one matrix product K·Aᵀ with A the (P+1) × N indicator matrix.
The p-value (1 + #{perm ≥ observed})/(1 + P) gives an exact level-α test.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from detectors.drift._validation import (
    as_embedding_matrix,
    check_probability,
    check_same_dim,
    resolve_backend,
)
from detectors.result import DetectorResult

_MEDIAN_PAIRS = 100_000  # pairs for the median heuristic (all pairs when fewer)


def _kernel_sums_numpy(
    pooled: np.ndarray, indicators: np.ndarray, pair_i: np.ndarray, pair_j: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Return aᵀKa and aᵀr for each indicator row, T = 1ᵀK1, and the bandwidth σ²."""
    sq = np.einsum("ij,ij->i", pooled, pooled)
    k = pooled @ pooled.T  # float32 GEMM, then |x|² + |y|² − 2x·y in place
    k *= -2.0
    k += sq[:, None]
    k += sq[None, :]
    np.maximum(k, 0.0, out=k)
    np.fill_diagonal(k, 0.0)
    sigma2 = float(np.median(k[pair_i, pair_j]))
    if sigma2 <= 0.0:
        sigma2 = float(k.max()) or 1.0  # over half the pairs are duplicates
    k *= np.float32(-0.5 / sigma2)
    np.exp(k, out=k)
    row_sums = k.sum(axis=1, dtype=np.float64)
    k_a = (k @ indicators.T).astype(np.float64)  # (N, P+1)
    a_k_a = np.einsum("np,pn->p", k_a, indicators)
    return a_k_a, indicators @ row_sums, float(row_sums.sum()), sigma2


def mmd_drift(
    reference: Any,
    current: Any,
    alpha: float = 0.05,
    n_permutations: int = 200,
    backend: str = "auto",
    *,
    max_samples: int = 5000,
    seed: int = 0,
) -> DetectorResult:
    """Detect a change in distribution with a permutation MMD test.

    Parameters
    ----------
    reference : array_like, shape (n, d)
    current : array_like, shape (m, d)
        Each window needs at least 2 rows.
    alpha : float, default 0.05
        False-alarm rate on stationary data (exact for a permutation test).
    n_permutations : int, default 200
        Number of random label permutations P.
    backend : {"auto", "numpy", "torch"}
        "auto" uses torch when CUDA is available, else numpy.
    max_samples : int, default 5000
        Each window is subsampled (without replacement, seeded) to at most this many
        rows, bounding memory at (2·max_samples)² kernel entries; the evidence says so.
    seed : int, default 0
        Seeds subsampling, the bandwidth pairs and the permutations.

    Returns
    -------
    DetectorResult
        ``statistic`` is MMD²_u, ``threshold`` the (1 − α) quantile of the permuted
        statistics, ``fired`` is ``p_value <= alpha``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> ref = rng.normal(size=(200, 8))
    >>> mmd_drift(ref, rng.normal(size=(150, 8)), backend="numpy").fired
    False
    >>> r = mmd_drift(ref, rng.normal(size=(150, 8)) * 0.5, backend="numpy")
    >>> r.fired, r.p_value < 0.01
    (True, True)
    """
    alpha = check_probability(alpha, "alpha")
    if int(n_permutations) < 1:
        raise ValueError(f"n_permutations must be >= 1; got {n_permutations}")
    if int(max_samples) < 2:
        raise ValueError(f"max_samples must be >= 2; got {max_samples}")
    backend = resolve_backend(backend)
    ref = as_embedding_matrix(reference, "reference", min_rows=2)
    cur = as_embedding_matrix(current, "current", min_rows=2)
    check_same_dim(ref, cur, "reference", "current")
    rng = np.random.default_rng(seed)
    ref_used = (
        ref
        if len(ref) <= max_samples
        else ref[np.sort(rng.choice(len(ref), max_samples, replace=False))]
    )
    cur_used = (
        cur
        if len(cur) <= max_samples
        else cur[np.sort(rng.choice(len(cur), max_samples, replace=False))]
    )
    n, m = len(ref_used), len(cur_used)
    pooled = np.concatenate([ref_used, cur_used])
    # Centre on the pooled mean: distances are unchanged and float32 |x|²+|y|²−2x·y
    # loses less to cancellation. Label-free, so the permutation test stays exact.
    pooled -= pooled.mean(axis=0, dtype=np.float64).astype(np.float32)
    total = n + m
    # The bandwidth uses random pooled pairs, chosen without regard to the labels.
    if total * (total - 1) // 2 <= _MEDIAN_PAIRS:
        pair_i, pair_j = np.triu_indices(total, k=1)
    else:
        pair_i = rng.integers(0, total, size=_MEDIAN_PAIRS)
        pair_j = (pair_i + rng.integers(1, total, size=_MEDIAN_PAIRS)) % total
    n_perm = int(n_permutations)
    order = np.tile(np.arange(total), (n_perm + 1, 1))
    order[1:] = rng.permuted(order[1:], axis=1)
    indicators = np.zeros((n_perm + 1, total), dtype=np.float32)
    np.put_along_axis(indicators, order[:, :n], 1.0, axis=1)
    if backend == "torch":
        from detectors.drift._torch_backend import kernel_sums_torch

        a_k_a, a_r, t_all, sigma2 = kernel_sums_torch(pooled, indicators, pair_i, pair_j)
    else:
        a_k_a, a_r, t_all, sigma2 = _kernel_sums_numpy(pooled, indicators, pair_i, pair_j)
    # K_ii = 1 for the RBF kernel, so the diagonals removed by the unbiased form are n and m.
    s_xx, s_xy, s_yy = a_k_a, a_r - a_k_a, t_all - 2.0 * a_r + a_k_a
    mmd2 = (s_xx - n) / (n * (n - 1)) + (s_yy - m) / (m * (m - 1)) - 2.0 * s_xy / (n * m)
    observed, permuted = float(mmd2[0]), mmd2[1:]
    p_value = float((1 + np.count_nonzero(permuted >= observed)) / (1 + n_perm))
    return DetectorResult(
        failure_mode="FM-6",
        statistic=observed,
        threshold=float(np.quantile(permuted, 1.0 - alpha)),
        p_value=p_value,
        fired=p_value <= alpha,
        evidence={
            "method": "MMD² (unbiased, RBF kernel, median heuristic) permutation test",
            "alpha": alpha,
            "n_permutations": n_perm,
            "bandwidth": float(np.sqrt(sigma2)),
            "backend": backend,
            "n_reference": len(ref),
            "n_current": len(cur),
            "n_reference_used": n,
            "n_current_used": m,
            "subsampled": n < len(ref) or m < len(cur),
            "dim": int(ref.shape[1]),
        },
    )
