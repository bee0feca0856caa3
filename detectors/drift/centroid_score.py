"""How far the current window's mean cosine similarity to the baseline centroid fell, in
standard errors: the textbook EWMA chart's observation for embedding drift, reported as
FM-6 evidence.

An EWMA chart (Roberts 1959) watches a stream of standardised batch means,
``x = (mu0 - mean(batch)) / (sigma0 * sqrt(1/m + 1/n))``, where ``mu0`` and ``sigma0`` are
the in-control mean and spread of the per-vector statistic, here estimated from the
``n`` baseline vectors (the ``1/n`` term carries the estimate's own error, so ``x`` stays
N(0, 1) in control). The per-vector statistic is the cosine similarity to the baseline
centroid, leave-one-out for the baseline's own rows
(:func:`detectors.drift.cosine.centroid_similarities`), so a fresh vector and a baseline
vector are scored alike. ``x`` is positive when the current vectors moved away from the
centroid: the chart signals on the upper side only.

Each ``x`` is N(0, 1) on its own, but against a baseline only twice the current window's
size, a third of its variance is the baseline's estimation error, which every observation
against that baseline shares: an EWMA of them spreads about twice as wide as its
run-length tables assume (Jones, Champ & Rigdon 2001), and a monitor charting it raised
repeated false alerts against one held baseline (``app.monitors.decision.sequential``). So it is
evidence of how far the vectors slid, next to :func:`detectors.drift.mmd_drift`'s test.

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


def shift_score(per_stream: Mapping[str, Mapping[str, float]]) -> float:
    """One score from the streams' :func:`centroid_shift`: the Bonferroni-adjusted smallest
    one-sided p as ``Φ⁻¹(1 − p)``, capped at ±8.

    >>> round(shift_score({"a": {"p_one_sided": 0.01}, "b": {"p_one_sided": 0.5}}), 3)
    2.054
    """
    k = len(per_stream)
    p = min(1.0, k * min(float(s["p_one_sided"]) for s in per_stream.values()))
    return float(min(8.0, max(-8.0, special.ndtri(1.0 - min(max(p, 1e-15), 1.0 - 1e-15)))))
