"""EWMA chart: Markov-chain ARL against published tables and against simulation."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from scipy.signal import lfilter

from detectors.drift import EWMAChart, ewma_arl0, ewma_limit_for_arl0


def simulated_run_lengths(
    lam: float, L: float, n_chains: int, rng: np.random.Generator, shift: float = 0.0
) -> np.ndarray:
    """Run lengths of independent charts on N(shift, 1) data, mu0 = 0, sigma0 = 1.

    Vectorised over chains: each block of observations is smoothed with lfilter
    (z_t = λx_t + (1−λ)z_{t−1}) carrying the last z as the filter state.
    """
    run_length = np.zeros(n_chains, dtype=np.int64)
    alive = np.arange(n_chains)
    last_z = np.zeros(n_chains)
    t0, block = 0, 1000
    while alive.size:
        x = rng.standard_normal((alive.size, block)) + shift
        z, _ = lfilter([lam], [1.0, lam - 1.0], x, axis=1, zi=(1 - lam) * last_z[alive, None])
        t = np.arange(t0 + 1, t0 + block + 1)
        limit = L * np.sqrt(lam / (2 - lam) * (1 - (1 - lam) ** (2 * t)))
        out = np.abs(z) > limit
        hit = out.any(axis=1)
        run_length[alive[hit]] = t0 + 1 + out[hit].argmax(axis=1)
        last_z[alive] = z[:, -1]
        alive = alive[~hit]
        t0 += block
    return run_length


def test_markov_chain_matches_lucas_saccucci_table() -> None:
    # Lucas & Saccucci (1990), Table 3: λ = 0.10, L = 2.814 -> ARL0 = 500; λ = 0.05, L = 2.615 -> 500.
    assert ewma_arl0(0.10, 2.814, time_varying=False) == pytest.approx(500, rel=0.01)
    assert ewma_arl0(0.05, 2.615, time_varying=False) == pytest.approx(500, rel=0.01)


def test_simulated_arl0_close_to_nominal() -> None:
    lam = 0.1
    L = ewma_limit_for_arl0(370, lam)
    run_lengths = simulated_run_lengths(lam, L, 2000, np.random.default_rng(7))
    # Standard error is about 370/sqrt(2000) = 8, so 15% is a > 6-sigma band.
    assert run_lengths.mean() == pytest.approx(370, rel=0.15)


def test_chart_signals_where_the_vectorised_simulation_does() -> None:
    lam, L = 0.2, 2.86
    rng = np.random.default_rng(3)
    x = rng.standard_normal((20, 2000))
    z = lfilter([lam], [1.0, lam - 1.0], x, axis=1)
    t = np.arange(1, 2001)
    out = np.abs(z) > L * np.sqrt(lam / (2 - lam) * (1 - (1 - lam) ** (2 * t)))
    for row, outside in zip(x, out, strict=True):
        chart = EWMAChart(lam=lam, L=L, mu0=0.0, sigma0=1.0)
        for value in row:
            chart.update(value)
        expected = int(outside.argmax()) + 1 if outside.any() else None
        assert chart.alarm_index == expected


def test_detects_one_sigma_shift_quickly() -> None:
    # Lucas & Saccucci: λ = 0.1, L = 2.814, shift 1σ -> ARL1 ≈ 10.3 (steady-state limits).
    run_lengths = simulated_run_lengths(0.1, 2.814, 2000, np.random.default_rng(5), shift=1.0)
    assert run_lengths.mean() < 11.0
    assert np.mean(run_lengths <= 20) >= 0.9


def test_fit_estimates_parameters_with_c4_correction() -> None:
    rng = np.random.default_rng(0)
    reference = rng.normal(5.0, 2.0, size=(4000, 10))
    sigmas = [float(EWMAChart().fit(row).sigma0 or 0.0) for row in reference]
    # s is biased low for m = 10 (E[s] = 0.9727σ); s/c4 is unbiased.
    assert np.mean(sigmas) == pytest.approx(2.0, rel=0.01)
    chart = EWMAChart().fit(reference[0])
    assert chart.mu0 == pytest.approx(reference[0].mean())


def test_reset_pickle_and_result() -> None:
    chart = EWMAChart(lam=0.3, L=3.0, mu0=0.0, sigma0=1.0)
    for value in [0.0, 5.0, 5.0]:
        chart.update(value)
    assert chart.drift_detected and chart.alarm_index == 2
    clone = pickle.loads(pickle.dumps(chart))
    assert clone.alarm_index == 2 and clone.z == chart.z
    result = chart.result()
    assert result.fired and result.statistic > result.threshold
    chart.reset()
    assert not chart.drift_detected and chart.t == 0 and chart.z == 0.0


@pytest.mark.parametrize(
    "kwargs",
    [{"lam": 0.0}, {"lam": 1.5}, {"L": -1.0}, {"mu0": 0.0}, {"mu0": 0.0, "sigma0": 0.0}],
)
def test_bad_parameters_raise(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        EWMAChart(**kwargs)


def test_bad_observations_raise() -> None:
    with pytest.raises(ValueError, match="not calibrated"):
        EWMAChart().update(1.0)
    with pytest.raises(ValueError, match="finite"):
        EWMAChart(mu0=0.0, sigma0=1.0).update(float("nan"))
    with pytest.raises(ValueError):
        EWMAChart().fit([1.0])
    with pytest.raises(ValueError):
        EWMAChart().fit([1.0, np.nan, 2.0])
    with pytest.raises(ValueError):
        ewma_limit_for_arl0(0.5)
