"""Cosine drift: KS test on each vector's cosine similarity to the reference centroid.

The statistic follows the usual embedding-drift recipe (a Kolmogorov–Smirnov test on
similarity to the reference centroid), with one correction: a reference vector's
similarity is taken to the leave-one-out centroid of the *other* reference vectors.
Scored against a centroid that contains it, every reference vector looks more typical
than a fresh one, which biases the KS test towards false alarms for small windows in
high dimension; with S = Σ u_j (u_j = x_j/|x_j|) the leave-one-out similarity is exact
and costs nothing extra:  cos(u_i, S − u_i) = (u_i·S − 1) / sqrt(|S|² − 2 u_i·S + 1).

Large references: the centroid comes from an evenly strided subset of at most 100,000
rows (its direction is then accurate to ~1e-3 of a degree-scale spread); rows outside
the subset are scored against it directly, being independent of it, so one pass over
the reference does norms and projections together while each chunk is in cache.
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Any

import numpy as np
from scipy import stats

from detectors.blas import single_thread_blas
from detectors.drift._validation import as_embedding_matrix, check_probability, check_same_dim
from detectors.result import DetectorResult

_CHUNK_ROWS = 16384
_CENTROID_ROWS = 100_000
# Below this sample size scipy's exact KS distribution is cheap; above it the
# Kolmogorov distribution with n = nm/(n+m) is accurate (scipy's "asymp" method).
_EXACT_KS_MAX = 10_000


def _unit_projections(x: np.ndarray, direction: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Row norms and, chunk by chunk while in cache, Σ x_i/|x_i| or x_i·direction/|x_i|."""
    norms = np.empty(x.shape[0], dtype=np.float32)
    proj = np.empty(x.shape[0] if direction is not None else 0, dtype=np.float64)
    direction_sum = np.zeros(x.shape[1], dtype=np.float64)
    # Thousands of small products: multithreaded BLAS loses more to thread
    # synchronisation than it gains (10× slower on a loaded 2-core machine).
    blas = single_thread_blas() if x.shape[0] > _CHUNK_ROWS else contextlib.nullcontext()
    with blas, np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for start in range(0, x.shape[0], _CHUNK_ROWS):
            chunk = x[start : start + _CHUNK_ROWS]
            chunk_norms = np.sqrt(np.einsum("ij,ij->i", chunk, chunk))
            norms[start : start + len(chunk)] = chunk_norms
            if direction is None:
                direction_sum += (1.0 / chunk_norms) @ chunk
            else:
                proj[start : start + len(chunk)] = (chunk @ direction) / chunk_norms
    return norms, (direction_sum if direction is None else proj)


def _check_norms(norms: np.ndarray, name: str) -> None:
    if not np.isfinite(norms).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    if (norms == 0).any():
        raise ValueError(f"{name} contains a zero vector; cosine similarity is undefined")


def _kolmogorov_sf(d: float, effective_n: int) -> float:
    # kstwo is exact for the one-sample law with n = nm/(n+m) but costs ~0.2 s at
    # n ~ 1e5; there its limit P(sqrt(n)·D > x) (kstwobign) is within ~1% relative.
    if effective_n > _EXACT_KS_MAX:
        return float(stats.kstwobign.sf(d * math.sqrt(effective_n)))
    return float(stats.kstwo.sf(d, effective_n))


def _own_cdf(x: np.ndarray) -> np.ndarray:
    """Right-continuous ECDF of sorted ``x`` at its own points ((i+1)/n unless ties)."""
    if np.any(x[1:] == x[:-1]):
        return np.searchsorted(x, x, side="right") / x.size
    return np.arange(1, x.size + 1) / x.size


def _ks_distance_sorted(a: np.ndarray, b: np.ndarray) -> float:
    """sup |F_a − F_b| over the pooled points; both inputs sorted."""
    at_a = np.abs(_own_cdf(a) - np.searchsorted(b, a, side="right") / b.size).max()
    at_b = np.abs(np.searchsorted(a, b, side="right") / a.size - _own_cdf(b)).max()
    return float(max(at_a, at_b))


@functools.lru_cache(maxsize=256)
def _ks_critical_value(alpha: float, effective_n: int) -> float:
    if effective_n > _EXACT_KS_MAX:
        return float(stats.kstwobign.isf(alpha) / math.sqrt(effective_n))
    return float(stats.kstwo.isf(alpha, effective_n))


def centroid_similarities(reference: Any, current: Any) -> tuple[np.ndarray, np.ndarray]:
    """Cosine similarity of each vector to the reference centroid direction.

    Parameters
    ----------
    reference : array_like, shape (n, d)
        Reference window (n >= 2); its centroid is the mean of its L2-normalised rows.
    current : array_like, shape (m, d)
        Current window.

    Returns
    -------
    reference_similarities : ndarray, shape (n,)
        Leave-one-out similarities (each row against the centroid of the others).
    current_similarities : ndarray, shape (m,)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> ref = rng.normal(size=(500, 8)) + 3.0
    >>> ref_s, cur_s = centroid_similarities(ref, ref[:10] * -1)
    >>> bool(ref_s.mean() > 0.9), bool((cur_s < 0).all())
    (True, True)
    """
    ref = as_embedding_matrix(reference, "reference", min_rows=2, check_finite=False)
    cur = as_embedding_matrix(current, "current", check_finite=False)
    check_same_dim(ref, cur, "reference", "current")
    stride = -(-len(ref) // _CENTROID_ROWS)  # ceil: the centroid subset is ref[::stride]
    subset_norms, s = _unit_projections(ref[::stride], None)
    _check_norms(subset_norms, "reference")
    s_norm = math.sqrt(max(float(s @ s), 1e-24))
    unit_s = (s / s_norm).astype(np.float32)
    ref_norms, ref_cos = _unit_projections(ref, unit_s)
    _check_norms(ref_norms, "reference")
    cur_norms, cur_sim = _unit_projections(cur, unit_s)
    _check_norms(cur_norms, "current")
    # Rows that built the centroid get the leave-one-out similarity (module docstring).
    u_dot_s = ref_cos[::stride] * s_norm
    loo_norm = np.sqrt(np.maximum(s_norm**2 - 2.0 * u_dot_s + 1.0, 1e-24))
    ref_sim = ref_cos
    ref_sim[::stride] = (u_dot_s - 1.0) / loo_norm
    return ref_sim, cur_sim


def ks_drift(reference_values: Any, current_values: Any, alpha: float = 0.01) -> DetectorResult:
    """Two-sample Kolmogorov–Smirnov test on two samples of a scalar statistic.

    D = sup_x |F_ref(x) − F_cur(x)|. The p-value is scipy's exact one when both
    samples have at most 10,000 values, else the Kolmogorov distribution
    ``kstwo(round(nm/(n+m)))`` (Hodges 1958; scipy's asymptotic method), or its limit
    ``kstwobign`` once nm/(n+m) > 10,000.
    ``threshold`` is the critical D at ``alpha`` from that same distribution;
    ``fired`` is ``p_value < alpha``.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> r = ks_drift(rng.normal(size=400), rng.normal(0.5, 1.0, size=300), alpha=0.01)
    >>> r.fired, r.statistic > r.threshold
    (True, True)
    """
    alpha = check_probability(alpha, "alpha")
    a = np.sort(np.asarray(reference_values, dtype=np.float64).ravel())
    b = np.sort(np.asarray(current_values, dtype=np.float64).ravel())
    if a.size == 0 or b.size == 0:
        raise ValueError("both samples must be non-empty")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("samples contain NaN or infinite values")
    n, m = a.size, b.size
    effective_n = max(1, round(n * m / (n + m)))
    if max(n, m) <= _EXACT_KS_MAX:
        res = stats.ks_2samp(a, b, method="auto")
        d, p = float(res.statistic), float(res.pvalue)
    else:
        d = _ks_distance_sorted(a, b)
        p = _kolmogorov_sf(d, effective_n)
    threshold = _ks_critical_value(alpha, effective_n)
    return DetectorResult(
        failure_mode="FM-6",
        statistic=d,
        threshold=threshold,
        p_value=p,
        fired=p < alpha,
        evidence={
            "method": "two-sample Kolmogorov-Smirnov",
            "alpha": alpha,
            "n_reference": int(n),
            "n_current": int(m),
            "mean_reference": float(a.mean()),
            "mean_current": float(b.mean()),
            "mean_shift": float(b.mean() - a.mean()),
        },
    )


def cosine_drift(reference: Any, current: Any, alpha: float = 0.01) -> DetectorResult:
    """Detect embedding drift by a KS test on cosine similarity to the reference centroid.

    Parameters
    ----------
    reference : array_like, shape (n, d)
        Reference embeddings (n >= 2).
    current : array_like, shape (m, d)
        Current-window embeddings.
    alpha : float, default 0.01
        False-alarm rate on stationary data.

    Returns
    -------
    DetectorResult
        ``statistic`` is the KS distance D; ``evidence`` reports the mean similarity
        of each window and their shift (negative: the current window moved away).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> mean = np.zeros(16); mean[0] = 3.0
    >>> ref = rng.normal(size=(1000, 16)) + mean
    >>> cosine_drift(ref, rng.normal(size=(300, 16)) + mean).fired
    False
    >>> r = cosine_drift(ref, rng.normal(size=(300, 16)) + np.roll(mean, 1) * 0.5 + mean)
    >>> r.fired, r.evidence["mean_similarity_shift"] < 0
    (True, True)
    """
    alpha = check_probability(alpha, "alpha")
    ref_sim, cur_sim = centroid_similarities(reference, current)
    ks = ks_drift(ref_sim, cur_sim, alpha=alpha)
    evidence = {
        "method": "KS on cosine similarity to the reference centroid (leave-one-out)",
        "alpha": alpha,
        "n_reference": ks.evidence["n_reference"],
        "n_current": ks.evidence["n_current"],
        "dim": int(np.shape(reference)[1]),
        "mean_similarity_reference": ks.evidence["mean_reference"],
        "mean_similarity_current": ks.evidence["mean_current"],
        "mean_similarity_shift": ks.evidence["mean_shift"],
    }
    return DetectorResult("FM-6", ks.statistic, ks.threshold, ks.p_value, ks.fired, evidence)
