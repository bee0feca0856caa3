"""Kernel two-sample test: unbiased MMD² with an RBF kernel and a permutation test.

MMD²_u (Gretton et al. 2012, JMLR 13, eq. 3) with k(x, y) = exp(−|x − y|²/(2σ²)) and σ the
median pairwise distance of the pooled sample (median heuristic). The pooled kernel
matrix K is computed once; for a group-indicator vector a (b = 1 − a), with r = K1 and
T = 1ᵀK1 every permuted statistic needs only aᵀKa and aᵀr:
    Σ_XX = aᵀKa,  Σ_XY = aᵀr − aᵀKa,  Σ_YY = T − 2aᵀr + aᵀKa,
so all permutations cost one matrix product K·Aᵀ with A the (P+1) × N indicator matrix.
The p-value (1 + #{perm ≥ observed})/(1 + P) gives an exact level-α test; with
``stop_after`` the permutations stop at that many exceedances (Besag and Clifford's
sequential p-value, :mod:`detectors.significance`), in chunks against the one K.
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
from detectors.significance import SequentialPValue

_MEDIAN_PAIRS = 100_000  # pairs for the median heuristic (all pairs when fewer)


def _rbf_kernel(
    pooled: np.ndarray, pair_i: np.ndarray, pair_j: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float]:
    """The pooled RBF kernel matrix K, its row sums r = K1 and the bandwidth σ²."""
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
    return k, k.sum(axis=1, dtype=np.float64), sigma2


def _kernel_sums(
    k: np.ndarray, row_sums: np.ndarray, indicators: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """aᵀKa and aᵀr for each indicator row."""
    k_a = (k @ indicators.T).astype(np.float64)  # (N, P)
    return np.einsum("np,pn->p", k_a, indicators), indicators @ row_sums


def _indicators(order: np.ndarray, n: int) -> np.ndarray:
    """Rows of 1 for the first ``n`` pooled indices of each permutation in ``order``."""
    indicators = np.zeros(order.shape, dtype=np.float32)
    np.put_along_axis(indicators, order[:, :n], 1.0, axis=1)
    return indicators


def _mmd2(a_k_a: np.ndarray, a_r: np.ndarray, t_all: float, n: int, m: int) -> np.ndarray:
    # K_ii = 1 for the RBF kernel, so the diagonals removed by the unbiased form are n and m.
    s_xx, s_xy, s_yy = a_k_a, a_r - a_k_a, t_all - 2.0 * a_r + a_k_a
    return (s_xx - n) / (n * (n - 1)) + (s_yy - m) / (m * (m - 1)) - 2.0 * s_xy / (n * m)


def _permuted_numpy(
    pooled: np.ndarray, pair_i: np.ndarray, pair_j: np.ndarray, rng: np.random.Generator,
    *, n: int, n_perm: int, stop_after: int | None,
) -> tuple[float, np.ndarray, SequentialPValue, float]:  # fmt: skip
    """The observed MMD², the permuted ones drawn, their p-value and σ²: K is computed
    once, permutations in doubling chunks until the p-value is decided."""
    total = len(pooled)
    k, row_sums, sigma2 = _rbf_kernel(pooled, pair_i, pair_j)
    t_all = float(row_sums.sum())
    observed = float(_mmd2(*_kernel_sums(k, row_sums, _indicators(np.arange(total)[None], n)),
                           t_all, n, total - n)[0])  # fmt: skip
    acc = SequentialPValue(n=n_perm, stop_after=stop_after)
    # A chunk costs size·total² multiply-adds: about 2**33 at most (a second or two here),
    # so the deadline checked once per chunk (SequentialPValue.add) is never far off.
    largest = max(8, min(1024, 2**33 // total**2))
    parts, size = [], min(32, largest)
    while acc.done < n_perm:
        size = min(size, n_perm - acc.done)
        order = rng.permuted(np.tile(np.arange(total), (size, 1)), axis=1)
        values = _mmd2(*_kernel_sums(k, row_sums, _indicators(order, n)), t_all, n, total - n)
        parts.append(values)
        if acc.add(values >= observed):
            break
        size = min(2 * size, largest)
    return observed, np.concatenate(parts)[: acc.done], acc, sigma2


def mmd_drift(
    reference: Any,
    current: Any,
    alpha: float = 0.05,
    n_permutations: int = 200,
    backend: str = "auto",
    *,
    max_samples: int = 5000,
    seed: int = 0,
    stop_after: int | None = None,
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
    if backend == "torch":
        from detectors.drift._torch_backend import kernel_sums_torch

        order = np.tile(np.arange(total), (n_perm + 1, 1))
        order[1:] = rng.permuted(order[1:], axis=1)
        a_k_a, a_r, t_all, sigma2 = kernel_sums_torch(pooled, _indicators(order, n), pair_i, pair_j)
        mmd2 = _mmd2(a_k_a, a_r, t_all, n, m)
        observed, permuted = float(mmd2[0]), mmd2[1:]
        # All permutations at once on the device; the same stopping rule read off them.
        acc = SequentialPValue(n=n_perm, stop_after=stop_after)
        acc.add(permuted >= observed)
        permuted = permuted[: acc.done]
    else:
        observed, permuted, acc, sigma2 = _permuted_numpy(
            pooled, pair_i, pair_j, rng, n=n, n_perm=n_perm, stop_after=stop_after
        )
    p_value = acc.p_value
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
            "resampling": acc.evidence(),
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
