"""The reflected one-sided EWMA chart: Markov-chain ARL against exact values and simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from detectors.drift import reflected_ewma_arl0, reflected_ewma_limit_for_arl0


def simulated_run_lengths(
    lam: float, L: float, n: int, rng: np.random.Generator, *, floor: float, shift: float = 0.0
) -> np.ndarray:
    """Run lengths of ``n`` independent reflected charts on max(N(shift, 1), floor) data."""
    run_length = np.zeros(n, dtype=np.int64)
    z = np.zeros(n)
    alive = np.arange(n)
    t = 0
    while alive.size:
        t += 1
        x = np.maximum(rng.standard_normal(alive.size) + shift, floor)
        z = np.maximum(0.0, lam * x + (1 - lam) * z)
        limit = L * math.sqrt(lam / (2 - lam) * (1 - (1 - lam) ** (2 * t)))
        hit = z > limit
        run_length[alive[hit]] = t
        alive, z = alive[~hit], z[~hit]
    return run_length


def test_lambda_one_is_the_one_sided_shewhart_chart() -> None:
    # z_t = max(0, x_t): the run length is geometric with P(x > L) per step.
    for L in (2.0, 3.0):
        expected = 1.0 / (1.0 - 0.5 * math.erfc(-L / math.sqrt(2)))
        assert reflected_ewma_arl0(1.0, L) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("floor", [-2.0, -math.inf])
def test_simulated_arl0_close_to_nominal(floor: float) -> None:
    lam = 0.2
    L = reflected_ewma_limit_for_arl0(300.0, lam, floor=floor)
    run_lengths = simulated_run_lengths(lam, L, 3000, np.random.default_rng(11), floor=floor)
    # Standard error about 300 / sqrt(3000) = 5.5: 10% is a > 5-sigma band.
    assert run_lengths.mean() == pytest.approx(300.0, rel=0.10)


def test_the_clip_is_carried_by_the_chain() -> None:
    # Raising low observations to -2 moves the chart up, so the same ARL needs a wider limit.
    lam = 0.2
    clipped = reflected_ewma_limit_for_arl0(720.0, lam, floor=-2.0)
    plain = reflected_ewma_limit_for_arl0(720.0, lam)
    assert clipped > plain
    assert reflected_ewma_arl0(lam, clipped, floor=-2.0) == pytest.approx(720.0, rel=1e-4)


def test_a_shift_is_signalled_quickly() -> None:
    lam = 0.2
    L = reflected_ewma_limit_for_arl0(720.0, lam, floor=-2.0)
    shifted = simulated_run_lengths(lam, L, 2000, np.random.default_rng(5), floor=-2.0, shift=1.5)
    assert np.median(shifted) <= 5


@pytest.mark.parametrize("kwargs", [{"lam": 0.0, "L": 3.0}, {"lam": 0.2, "L": 0.0}])
def test_bad_parameters_raise(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        reflected_ewma_arl0(**kwargs)
    with pytest.raises(ValueError):
        reflected_ewma_limit_for_arl0(1.0, 0.2)
