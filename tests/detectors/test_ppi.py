"""Prediction-powered inference: hand-computed values, degenerate inputs, a biased judge,
coverage with few labels and the two-window test's calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from detectors.ppi import PPIEstimate, ppi_difference, ppi_mean

# Eight judged traces, the first four labeled.
JUDGED = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0])
LABELS = np.array([1.0, 0.0, 0.0, 1.0])


def test_power_tuned_estimate_by_hand() -> None:
    # Var(f) over all 8 judged: mean 5/8, sum of squares 15/8, /7 -> 15/56.
    # Cov(y, f) on the labeled: sum (y - 1/2)(f - 3/4) = 1/2, /3 -> 1/6.
    # lambda = (1/6) / ((1 + 4/4) * 15/56) = 14/45; unlabeled judge mean = 1/2.
    lam = 14 / 45
    est = ppi_mean(JUDGED, JUDGED[:4], LABELS, adjusted=False)
    assert est.lam == pytest.approx(lam)
    # lambda * 1/2 + mean(y - lambda f) = 1/2 - lambda / 4
    assert est.estimate == pytest.approx(0.5 - lam / 4)
    residual = LABELS - lam * JUDGED[:4]
    se = math.sqrt(residual.var(ddof=1) / 4 + lam**2 * (15 / 56) / 4)
    assert est.standard_error == pytest.approx(se)
    assert est.interval == pytest.approx(
        (est.estimate - 1.959964 * se, est.estimate + 1.959964 * se)
    )
    assert (est.n_judged, est.n_labeled, est.labels_only, est.judge_only) == (8, 4, 0.5, 0.625)


def test_the_adjusted_variance_adds_one_pseudo_label_each_way() -> None:
    lam = 14 / 45
    est = ppi_mean(JUDGED, JUDGED[:4], LABELS)
    residual = np.append(LABELS - lam * JUDGED[:4], [1.0, -lam])  # (y, f) = (1, 0) and (0, 1)
    label_var, judge_var = residual.var(ddof=1) / 4, lam**2 * (15 / 56) / 4
    assert est.estimate == pytest.approx(0.5 - lam / 4)  # the estimate is not adjusted
    assert est.label_variance == pytest.approx(label_var)
    assert est.standard_error == pytest.approx(math.sqrt(label_var + judge_var))
    df = (label_var + judge_var) ** 2 / (label_var**2 / 3 + judge_var**2 / 3)
    assert est.degrees_of_freedom == pytest.approx(df)
    half = stats.t.ppf(0.975, df) * est.standard_error
    assert est.interval[1] - est.estimate == pytest.approx(half)


@pytest.mark.parametrize(("lam", "expected"), [(1.0, 0.5 - 1 / 4), (0.0, 0.5)])
def test_a_fixed_lambda_is_classical_ppi_or_the_labels_alone(lam: float, expected: float) -> None:
    # lambda = 1: judge mean on the unlabeled (1/2) + mean(y - f) on the labeled (-1/4).
    est = ppi_mean(JUDGED, JUDGED[:4], LABELS, lam=lam)
    assert est.estimate == pytest.approx(expected) and est.lam == lam


def test_a_wider_level_gives_a_wider_interval() -> None:
    narrow = ppi_mean(JUDGED, JUDGED[:4], LABELS, level=0.8)
    wide = ppi_mean(JUDGED, JUDGED[:4], LABELS, level=0.99)
    assert wide.interval[0] < narrow.interval[0] < narrow.interval[1] < wide.interval[1]


def test_fewer_than_two_labels_is_insufficient_not_an_interval() -> None:
    for n in (0, 1):
        est = ppi_mean(JUDGED, JUDGED[:n], LABELS[:n])
        assert not est.sufficient and est.reason == "fewer than 2 labels"
        assert math.isnan(est.estimate) and all(math.isnan(v) for v in est.interval)
        assert est.judge_only == 0.625


def test_no_variance_is_insufficient_without_the_adjustment() -> None:
    ones = np.ones(6)
    est = ppi_mean(ones, ones[:3], ones[:3], adjusted=False)
    assert not est.sufficient and "no variance" in (est.reason or "")
    # The adjusted variance never claims zero: three labels of 1 are not a certainty.
    adjusted = ppi_mean(ones, ones[:3], ones[:3])
    assert adjusted.sufficient and adjusted.estimate == 1.0 and adjusted.interval[0] < 0.8


def test_every_judged_trace_labeled_is_the_labels_mean() -> None:
    est = ppi_mean(JUDGED[:4], JUDGED[:4], LABELS)
    assert est.lam == 0.0 and est.estimate == 0.5 and est.judge_variance == 0.0


@pytest.mark.parametrize(
    ("judged", "labeled_judge", "labels", "message"),
    [
        (JUDGED, JUDGED[:3], LABELS, "labeled_judge has 3 values"),
        (JUDGED[:2], JUDGED[:4], LABELS, "subset"),
        (np.append(JUDGED, np.nan), JUDGED[:4], LABELS, "not finite"),
    ],
)
def test_inconsistent_inputs_are_refused(judged, labeled_judge, labels, message) -> None:
    with pytest.raises(ValueError, match=message):
        ppi_mean(judged, labeled_judge, labels)


def simulate(rng: np.random.Generator, n: int, *, rate: float, agreement: float, bias: float,
             labeled: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """A binary objective, a judge agreeing with it at ``agreement`` whose scores are
    shifted by ``bias``, and a random labeled subset: (judged, labeled_judge, labels)."""
    y = (rng.random(n) < rate).astype(float)
    f = np.where(rng.random(n) < agreement, y, 1.0 - y) + bias
    keep = rng.random(n) < labeled
    return f, f[keep], y[keep]


def test_a_biased_judge_does_not_move_the_estimate() -> None:
    rng = np.random.default_rng(0)
    runs = [
        ppi_mean(*simulate(rng, 1500, rate=0.4, agreement=0.85, bias=0.2, labeled=0.05))
        for _ in range(300)
    ]
    # The judge's mean: 0.4 * 0.85 + 0.6 * 0.15 = 0.43 from its errors, plus its 0.2 bias.
    assert np.mean([e.judge_only for e in runs]) == pytest.approx(0.63, abs=0.01)
    assert np.mean([e.estimate for e in runs]) == pytest.approx(0.4, abs=0.01)
    # Narrower than the labels alone would be, at the same labels.
    labels_only = [math.sqrt(0.24 / e.n_labeled) for e in runs]
    assert np.median([e.standard_error for e in runs]) < 0.85 * np.median(labels_only)


def test_ten_labels_a_window_still_cover() -> None:
    """The textbook interval covers ~0.83 here (an 85% judge and ~10 labels: a sample with
    no disagreement claims a residual variance near zero); the adjusted one at least 0.94
    (bench/ppi_coverage.py measures every cell)."""
    rng = np.random.default_rng(1)
    covered = textbook = runs = 0
    while runs < 600:
        data = simulate(rng, 1000, rate=0.4, agreement=0.85, bias=0.15, labeled=0.01)
        est, plain = ppi_mean(*data), ppi_mean(*data, adjusted=False)
        if not est.sufficient:
            continue
        runs += 1
        covered += est.interval[0] <= 0.4 <= est.interval[1]
        textbook += plain.interval[0] <= 0.4 <= plain.interval[1]
    assert covered / runs >= 0.94 and textbook / runs < 0.9, (covered, textbook)


def test_difference_by_hand() -> None:
    ref = PPIEstimate(
        0.40,
        0.03,
        (0.34, 0.46),
        0.95,
        1200,
        61,
        0.8,
        0.41,
        0.5,
        label_variance=0.0009,
        judge_variance=0.0,
        degrees_of_freedom=60,
    )
    cur = PPIEstimate(0.30, 0.04, (0.22, 0.38), 0.95, 1100, 41, 0.8, 0.29, 0.4,
                      label_variance=0.0016, judge_variance=0.0, degrees_of_freedom=40)  # fmt: skip
    d = ppi_difference(ref, cur)
    assert d is not None
    assert d.difference == pytest.approx(-0.1) and d.standard_error == pytest.approx(0.05)
    assert d.statistic == pytest.approx(2.0)
    df = 0.0025**2 / (0.0009**2 / 60 + 0.0016**2 / 40)
    assert d.degrees_of_freedom == pytest.approx(df)
    assert d.p_value == pytest.approx(stats.t.sf(2.0, df))
    assert ppi_difference(cur, ref).p_value == pytest.approx(stats.t.sf(-2.0, df))  # rose


def test_difference_of_an_insufficient_window_is_none() -> None:
    ok = ppi_mean(JUDGED, JUDGED[:4], LABELS)
    few = ppi_mean(JUDGED, JUDGED[:1], LABELS[:1])
    assert ppi_difference(ok, few) is None and ppi_difference(few, ok) is None


@pytest.mark.parametrize("agreement", [0.7, 0.95])
def test_stationary_windows_reject_at_most_at_the_level(agreement: float) -> None:
    """1% labels of 1,000-2,000 judged traces (10-20 labels), windows of one law: the
    one-sided p-value is at most alpha at the rate alpha (the normal's tail gave 1.6x at
    0.001 with a 70% judge; the t with Welch-Satterthwaite degrees of freedom did not)."""
    rng = np.random.default_rng(2)
    p_values: list[float] = []
    while len(p_values) < 2000:
        pair = []
        for _ in range(2):
            data = simulate(rng, int(rng.integers(1000, 2001)), rate=0.4, agreement=agreement,
                            bias=0.1, labeled=0.01)  # fmt: skip
            if data[2].size >= 10:
                pair.append(ppi_mean(*data))
        if len(pair) == 2:
            d = ppi_difference(*pair)
            assert d is not None
            p_values.append(d.p_value)
    p = np.array(p_values)
    # Binomial(2000, alpha) upper 99.5% points: 117 at 0.05, 33 at 0.01.
    assert np.sum(p <= 0.05) <= 117 and np.sum(p <= 0.01) <= 33, (
        np.sum(p <= 0.05), np.sum(p <= 0.01),
    )  # fmt: skip
