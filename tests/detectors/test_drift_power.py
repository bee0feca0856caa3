"""Calibration and power of the batch drift tests (cosine KS, MMD) on documented shifts.

Base data: 16-d, mean 3·e0, noise sd 1 in a 4-d subspace (e0..e3) and 0.2 elsewhere.
Shifts of the current window:
- mean shift: +1.0 along e4 (orthogonal to the mean);
- rotated subspace: the signal subspace rotated by 30° in the planes (e_i, e_{i+4});
- new clusters: 30% of the window from a new cluster at 3·e5;
- variance collapse: noise scaled by 0.3 (generic, low-diversity embeddings).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from scipy import stats
from threadpoolctl import threadpool_limits

from detectors.drift import cosine_drift, mmd_drift

DIM = 16


@pytest.fixture(autouse=True, scope="module")
def single_thread_blas() -> Iterator[None]:
    # Hundreds of tiny kernels: BLAS threads only add synchronisation on a shared machine.
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def base_sample(rng: np.random.Generator, n: int, noise_scale: float = 1.0) -> np.ndarray:
    scales = np.r_[np.ones(4), np.full(DIM - 4, 0.2)] * noise_scale
    x = rng.normal(size=(n, DIM)) * scales
    x[:, 0] += 3.0
    return x


def rotation(angle_deg: float) -> np.ndarray:
    r = np.eye(DIM)
    c, s = np.cos(np.radians(angle_deg)), np.sin(np.radians(angle_deg))
    for i in range(4):
        r[i, i], r[i, i + 4], r[i + 4, i], r[i + 4, i + 4] = c, -s, s, c
    return r


def shifted_sample(rng: np.random.Generator, n: int, shift: str) -> np.ndarray:
    if shift == "mean":
        return base_sample(rng, n) + np.eye(DIM)[4] * 1.0
    if shift == "rotated_subspace":
        return base_sample(rng, n) @ rotation(30.0).T
    if shift == "new_clusters":
        x = base_sample(rng, n)
        k = int(0.3 * n)
        x[:k] = rng.normal(size=(k, DIM)) * 0.5 + np.eye(DIM)[5] * 3.0
        return x
    if shift == "variance_collapse":
        return base_sample(rng, n, noise_scale=0.3)
    raise AssertionError(shift)


def run_cosine(ref: np.ndarray, cur: np.ndarray, alpha: float) -> bool:
    return cosine_drift(ref, cur, alpha=alpha).fired


def run_mmd(ref: np.ndarray, cur: np.ndarray, alpha: float) -> bool:
    return mmd_drift(ref, cur, alpha=alpha, n_permutations=99, backend="numpy").fired


DETECTORS = {"cosine": run_cosine, "mmd": run_mmd}


@pytest.mark.parametrize("name", DETECTORS)
@pytest.mark.parametrize(("alpha", "trials"), [(0.05, 300), (0.2, 150)])
def test_false_alarm_rate_within_alpha(name: str, alpha: float, trials: int) -> None:
    rng = np.random.default_rng(1234)
    alarms = sum(
        DETECTORS[name](base_sample(rng, 80), base_sample(rng, 50), alpha) for _ in range(trials)
    )
    # One-sided binomial bound: a calibrated test exceeds it with probability 0.001.
    assert alarms <= stats.binom.ppf(0.999, trials, alpha)
    # ...and is not uselessly conservative either.
    assert alarms >= stats.binom.ppf(0.001, trials, alpha / 4)


@pytest.mark.parametrize("name", DETECTORS)
@pytest.mark.parametrize("shift", ["mean", "rotated_subspace", "new_clusters", "variance_collapse"])
def test_power_on_documented_shifts(name: str, shift: str) -> None:
    trials = 40
    rng = np.random.default_rng(99)
    hits = sum(
        DETECTORS[name](base_sample(rng, 300), shifted_sample(rng, 200, shift), 0.05)
        for _ in range(trials)
    )
    assert hits / trials >= 0.9
