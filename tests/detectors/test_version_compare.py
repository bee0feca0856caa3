"""The version comparison's tests agree with scipy's on the raw values they summarise, and
hold their size on two samples of one distribution."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from detectors import version_compare as vc


def test_binned_mann_whitney_is_scipys_on_the_binned_values() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(0, 40, 300)
    b = rng.integers(3, 45, 250)
    got = vc.compare_binned("latency", np.bincount(a, minlength=45), np.bincount(b, minlength=45))
    want = stats.mannwhitneyu(b, a, alternative="two-sided", method="asymptotic")
    assert got.statistic == pytest.approx(want.statistic / (a.size * b.size))
    assert got.p_value == pytest.approx(want.pvalue, rel=1e-9)


def test_welch_from_sums_is_scipys_on_the_values() -> None:
    rng = np.random.default_rng(4)
    a, b = rng.lognormal(6, 1, 400), rng.lognormal(6.1, 1.2, 350)
    got = vc.compare_means("cost", a.size, a.sum(), (a * a).sum(), b.size, b.sum(), (b * b).sum())
    want = stats.ttest_ind(b, a, equal_var=False)
    assert got.statistic == pytest.approx(want.statistic, rel=1e-6)
    assert got.p_value == pytest.approx(want.pvalue, rel=1e-6)
    assert vc.compare_means("x", 1, 5.0, 25.0, 10, 50.0, 250.0).p_value is None  # one trace


def test_rates_are_fishers_two_sided_and_empty_versions_untested() -> None:
    got = vc.compare_rates("errors", 5, 100, 15, 100)
    assert got.p_value == pytest.approx(stats.fisher_exact([[15, 85], [5, 95]]).pvalue)
    assert got.change == pytest.approx(0.10) and got.relative_change == pytest.approx(2.0)
    empty = vc.compare_rates("errors", 0, 0, 3, 10)
    assert (empty.a, empty.p_value, empty.change) == (None, None, None)


def test_each_test_holds_its_size_on_one_distribution() -> None:
    rng = np.random.default_rng(5)
    p_rate, p_mean, p_rank = [], [], []
    for _ in range(400):
        x, y = rng.lognormal(7, 1, 300), rng.lognormal(7, 1, 300)
        p_mean.append(vc.compare_means("m", 300, x.sum(), (x * x).sum(), 300, y.sum(), (y * y).sum()).p_value)
        bins = np.linspace(0, 20_000, 200)
        cx, cy = np.histogram(x, bins)[0], np.histogram(y, bins)[0]
        p_rank.append(vc.compare_binned("l", cx, cy).p_value)
        p_rate.append(vc.compare_rates("r", rng.binomial(500, 0.05), 500, rng.binomial(500, 0.05), 500).p_value)
    for ps in (p_rate, p_mean, p_rank):
        assert np.mean(np.asarray(ps) <= 0.05) <= 0.08  # nominal 5 %, Monte Carlo slack
