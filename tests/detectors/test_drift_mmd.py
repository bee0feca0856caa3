"""MMD permutation test: backends agree, subsampling is reported, bad input is refused."""

from __future__ import annotations

import numpy as np
import pytest

from detectors.drift import mmd_drift
from detectors.result import DetectorResult


def windows(seed: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(120, 24)), rng.normal(size=(90, 24)) + shift


@pytest.mark.parametrize("shift", [0.0, 0.3])
def test_numpy_and_torch_agree(shift: float) -> None:
    pytest.importorskip("torch")
    ref, cur = windows(1, shift)
    a = mmd_drift(ref, cur, backend="numpy", n_permutations=300)
    b = mmd_drift(ref, cur, backend="torch", n_permutations=300)
    assert b.statistic == pytest.approx(a.statistic, rel=1e-3, abs=1e-6)
    assert b.threshold == pytest.approx(a.threshold, rel=1e-3, abs=1e-6)
    assert b.p_value == pytest.approx(a.p_value, abs=2 / 301)
    assert a.fired == b.fired
    assert b.evidence["bandwidth"] == pytest.approx(a.evidence["bandwidth"], rel=1e-4)


def test_statistic_matches_direct_unbiased_formula() -> None:
    ref, cur = windows(2, 0.2)
    result = mmd_drift(ref, cur, backend="numpy", n_permutations=10)
    gamma = 0.5 / result.evidence["bandwidth"] ** 2

    def gram(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.exp(-gamma * ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1))

    n, m = len(ref), len(cur)
    kxx, kyy, kxy = gram(ref, ref), gram(cur, cur), gram(ref, cur)
    expected = (kxx.sum() - n) / (n * (n - 1)) + (kyy.sum() - m) / (m * (m - 1)) - 2 * kxy.mean()
    assert result.statistic == pytest.approx(expected, rel=1e-3, abs=1e-6)


def test_subsampling_bounds_size_and_is_reported() -> None:
    rng = np.random.default_rng(3)
    result = mmd_drift(
        rng.normal(size=(700, 8)), rng.normal(size=(50, 8)), max_samples=200, backend="numpy"
    )
    assert result.evidence["subsampled"] is True
    assert result.evidence["n_reference_used"] == 200
    assert result.evidence["n_current_used"] == 50
    assert result.evidence["n_reference"] == 700


def test_deterministic_for_a_seed_and_p_value_is_exact_level() -> None:
    ref, cur = windows(4)
    a = mmd_drift(ref, cur, backend="numpy", seed=11)
    assert a == mmd_drift(ref, cur, backend="numpy", seed=11)
    assert isinstance(a, DetectorResult)
    assert a.p_value is not None and 1 / 201 <= a.p_value <= 1.0


@pytest.mark.parametrize(
    ("ref", "cur", "match"),
    [
        (np.full((5, 3), np.nan), np.zeros((5, 3)), "NaN"),
        (np.zeros((0, 3)), np.zeros((5, 3)), "at least"),
        (np.zeros((5, 3)), np.zeros((5, 4)), "same dimension"),
        (np.zeros(5), np.zeros((5, 1)), "2-D"),
    ],
)
def test_bad_input_raises(ref: np.ndarray, cur: np.ndarray, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        mmd_drift(ref, cur, backend="numpy")


@pytest.mark.parametrize(
    "kwargs", [{"alpha": 0.0}, {"n_permutations": 0}, {"backend": "jax"}, {"max_samples": 1}]
)
def test_bad_parameters_raise(kwargs: dict[str, object]) -> None:
    ref, cur = windows(5)
    with pytest.raises(ValueError):
        mmd_drift(ref, cur, **kwargs)  # type: ignore[arg-type]
