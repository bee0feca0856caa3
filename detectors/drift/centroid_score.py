"""The textbook EWMA chart's observation for embedding drift: how far the current window's
mean cosine similarity to the baseline centroid fell, in standard errors.

An EWMA chart (Roberts 1959) watches a stream of standardised batch means,
``x = (mu0 - mean(batch)) / (sigma0 * sqrt(1/m + 1/n))``, where ``mu0`` and ``sigma0`` are
the in-control mean and spread of the per-vector statistic, here estimated from the
``n`` baseline vectors (the ``1/n`` term carries the estimate's own error, so ``x`` stays
N(0, 1) in control). The per-vector statistic is the cosine similarity to the baseline
centroid, leave-one-out for the baseline's own rows
(:func:`detectors.drift.cosine.centroid_similarities`), so a fresh vector and a baseline
vector are scored alike. ``x`` is positive when the current vectors moved away from the
centroid: the chart signals on the upper side only.

Where :func:`detectors.drift.mmd_drift` catches a change of *shape* (a new cluster as far
from the centroid as the old ones), this catches a steady slide away from the baseline a
little at a time, which no single MMD test at a 30-day false-alert budget is sure of:
the monitor's chart (``app.monitors.sequential``) accumulates it.

Several streams give one observation: the smallest one-sided p-value, Bonferroni-adjusted
over the streams, mapped back to ``Φ⁻¹(1 − p)`` (stochastically at most N(0, 1) in
control whatever the streams' dependence: conservative, never anti-conservative).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import special

from detectors.drift.cosine import centroid_similarities


def centroid_shift(reference: Any, current: Any) -> dict[str, float]:
    """The standardised fall of the current mean similarity to the reference centroid.

    >>> rng = np.random.default_rng(0)
    >>> mean = np.zeros(16); mean[0] = 3.0
    >>> ref = rng.normal(size=(800, 16)) + mean
    >>> abs(centroid_shift(ref, rng.normal(size=(200, 16)) + mean)["z"]) < 3
    True
    >>> centroid_shift(ref, rng.normal(size=(200, 16)) + mean + np.roll(mean, 1))["z"] > 3
    True
    """
    ref_sim, cur_sim = centroid_similarities(reference, current)
    n, m = len(ref_sim), len(cur_sim)
    mu0 = float(np.mean(ref_sim, dtype=np.float64))
    sigma0 = float(np.std(ref_sim, ddof=1, dtype=np.float64))
    mean_cur = float(np.mean(cur_sim, dtype=np.float64))
    se = max(sigma0, 1e-12) * math.sqrt(1.0 / m + 1.0 / n)
    z = (mu0 - mean_cur) / se
    return {"z": z, "p_one_sided": float(special.ndtr(-z)), "mu0": mu0, "sigma0": sigma0,
            "mean_current": mean_cur, "n_reference": n, "n_current": m}  # fmt: skip


def chart_score(per_stream: Mapping[str, Mapping[str, float]]) -> float:
    """One chart observation from the streams' :func:`centroid_shift`: the Bonferroni-adjusted
    smallest one-sided p as ``Φ⁻¹(1 − p)``.

    >>> round(chart_score({"a": {"p_one_sided": 0.01}, "b": {"p_one_sided": 0.5}}), 3)
    2.054
    """
    k = len(per_stream)
    p = min(1.0, k * min(float(s["p_one_sided"]) for s in per_stream.values()))
    return float(special.ndtri(1.0 - max(p, 1e-300)))
