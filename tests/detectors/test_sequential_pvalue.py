"""Besag-Clifford early stopping of Monte Carlo p-values: the same decisions as the full
test at its level, a valid p-value, and far fewer resamples on stationary data."""

from __future__ import annotations

import numpy as np

from detectors.drift import mmd_drift
from detectors.significance import stop_after_for
from detectors.window_permutation import window_permutation_test


def _rate(units: np.ndarray) -> np.ndarray:
    return units[..., 0] / np.maximum(units[..., 1], 1.0)


def _windows(rng: np.random.Generator, shift: float) -> tuple[np.ndarray, np.ndarray]:
    ref = np.column_stack([rng.binomial(1, 0.1, 300), np.ones(300)])
    cur = np.column_stack([rng.binomial(1, 0.1 + shift, 150), np.ones(150)])
    return cur, ref


def test_decisions_equal_the_full_tests_and_null_resamples_are_few() -> None:
    rng = np.random.default_rng(11)
    alpha, n = 0.002, 4000
    h = stop_after_for(alpha, n)
    stopped_null: list[int] = []
    for k in range(60):
        cur, ref = _windows(rng, (0.0, 0.05, 0.12)[k % 3])
        _, full = window_permutation_test(cur, ref, _rate, n_permutations=n, seed=k)
        _, seq = window_permutation_test(cur, ref, _rate, n_permutations=n, seed=k, stop_after=h)
        assert (full <= alpha) == (seq <= alpha)
        if round(full * (n + 1)) - 1 < h:  # fewer than h exceedances in all n: no stop
            assert seq == full  # a small p is the full test's own, to the last resample
        if k % 3 == 0:
            stopped_null.append(round(h / seq) if seq != full else n)
    # On stationary windows p ~ U(0, 1): the stop comes after ~h / p resamples.
    assert np.median(stopped_null) < 100


def test_the_sequential_p_value_is_valid_under_the_null() -> None:
    rng = np.random.default_rng(5)
    ps = []
    for k in range(300):
        cur, ref = _windows(rng, 0.0)
        ps.append(window_permutation_test(cur, ref, _rate, n_permutations=2000, seed=k,
                                          stop_after=10)[1])  # fmt: skip
    ps_arr = np.array(ps)
    for u in (0.05, 0.1, 0.25, 0.5):
        assert np.mean(ps_arr <= u) <= u + 2.5 * np.sqrt(u * (1 - u) / len(ps_arr))


def test_mmd_stops_early_without_changing_a_detection() -> None:
    rng = np.random.default_rng(2)
    ref = rng.normal(size=(200, 8)).astype(np.float32)
    same = rng.normal(size=(100, 8)).astype(np.float32)
    moved = (rng.normal(size=(100, 8)) * 0.7).astype(np.float32)
    h = stop_after_for(0.001, 5000)
    quiet = mmd_drift(ref, same, alpha=0.001, n_permutations=5000, backend="numpy", stop_after=h)
    assert quiet.evidence["resampling"]["stopped_early"]
    assert quiet.evidence["resampling"]["resamples"] < 500 and not quiet.fired
    full = mmd_drift(ref, moved, alpha=0.001, n_permutations=5000, backend="numpy")
    seq = mmd_drift(ref, moved, alpha=0.001, n_permutations=5000, backend="numpy", stop_after=h)
    assert seq.fired and full.fired and seq.p_value == full.p_value
    assert seq.evidence["resampling"]["resamples"] == 5000


def _wide(rng: np.random.Generator, n: int, shift: float = 0.0) -> np.ndarray:
    """Per-trace count rows as a monitor window at volume has them: few distinct values."""
    errors = rng.binomial(1, 0.05 + shift, n)
    return np.column_stack([errors, rng.integers(1, 4, n)]).astype(float)


def test_large_windows_draw_the_same_permutation_distribution_by_groups() -> None:
    """From GROUPED_FROM units the current window's sums are drawn by groups of identical
    rows (multivariate hypergeometric), not by shuffling every label: the same null
    distribution, so the same p-values up to resampling noise, valid and as powerful."""
    from detectors import window_permutation

    rng = np.random.default_rng(11)
    units = _wide(rng, 8000)
    labels = np.zeros(len(units), dtype=np.float32)
    labels[:4000] = 1.0
    u32 = units.astype(np.float32)
    grouped = window_permutation._grouped_draws(u32, 4000, np.random.default_rng(1))
    assert grouped is not None  # 8,000 units, 6 distinct rows
    shuffled = window_permutation._shuffled_draws(u32, labels, np.random.default_rng(2))
    a, b = grouped(4000), shuffled(4000)
    assert np.allclose(a.mean(axis=0), b.mean(axis=0), rtol=0.002)
    assert np.allclose(a.std(axis=0), b.std(axis=0), rtol=0.06)
    assert window_permutation._grouped_draws(u32[:4000], 2000, rng) is None  # small: shuffled
    assert (
        window_permutation._grouped_draws(rng.random((8000, 2)).astype(np.float32), 4000, rng)
        is None
    )

    nulls = [
        window_permutation_test(_wide(rng, 6000), _wide(rng, 6000), _rate,
                                n_permutations=99, seed=k)[1]
        for k in range(200)
    ]  # fmt: skip
    assert abs(np.mean(np.array(nulls) <= 0.1) - 0.1) < 0.05
    _, p = window_permutation_test(
        _wide(rng, 6000, shift=0.02), _wide(rng, 6000), _rate, n_permutations=999, seed=0
    )
    assert p <= 0.002
