"""Cosine drift: leave-one-out calibration, evidence, large-sample path, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from detectors.drift import centroid_similarities, cosine_drift, ks_drift


def test_leave_one_out_similarity_is_exact() -> None:
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(30, 5)) + 1.0
    ref_sim, _ = centroid_similarities(ref, ref[:2])
    unit = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    for i in range(len(ref)):
        others = np.delete(unit, i, axis=0).sum(axis=0)
        expected = unit[i] @ others / np.linalg.norm(others)
        assert ref_sim[i] == pytest.approx(expected, abs=1e-5)


def test_large_reference_uses_strided_centroid_subset(monkeypatch: pytest.MonkeyPatch) -> None:
    import detectors.drift.cosine as cosine

    monkeypatch.setattr(cosine, "_CENTROID_ROWS", 10)
    rng = np.random.default_rng(4)
    ref = rng.normal(size=(35, 4)) + 2.0
    ref_sim, cur_sim = centroid_similarities(ref, ref[:3])
    unit = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    subset = np.arange(0, 35, 4)  # stride ceil(35 / 10) = 4
    total = unit[subset].sum(axis=0)
    for i in range(35):
        others = total - unit[i] if i in subset else total
        assert ref_sim[i] == pytest.approx(unit[i] @ others / np.linalg.norm(others), abs=1e-5)
    np.testing.assert_allclose(cur_sim, unit[:3] @ total / np.linalg.norm(total), atol=1e-5)


def test_small_windows_in_high_dimension_stay_calibrated() -> None:
    # In-sample similarities would sit ~d/n above fresh ones here and fire nearly always.
    rng = np.random.default_rng(1)
    alarms = sum(
        cosine_drift(rng.normal(size=(60, 64)) + 0.5, rng.normal(size=(60, 64)) + 0.5, 0.05).fired
        for _ in range(200)
    )
    assert alarms <= 20  # binomial(200, 0.05) exceeds 19 with probability < 0.002


def test_evidence_reports_mean_similarity_shift() -> None:
    rng = np.random.default_rng(2)
    mean = np.r_[3.0, np.zeros(7)]
    result = cosine_drift(rng.normal(size=(500, 8)) + mean, rng.normal(size=(200, 8)) * 2 + mean)
    assert result.fired
    assert result.evidence["mean_similarity_shift"] < 0
    assert result.evidence["n_reference"] == 500 and result.evidence["dim"] == 8


@pytest.mark.parametrize("decimals", [None, 2])
def test_large_sample_path_agrees_with_scipy(decimals: int | None) -> None:
    from scipy import stats

    rng = np.random.default_rng(3)
    a, b = rng.normal(size=30_000), rng.normal(0.02, 1.0, size=20_000)
    if decimals is not None:  # heavy ties
        a, b = np.round(a, decimals), np.round(b, decimals)
    ours = ks_drift(a, b, alpha=0.05)
    ref = stats.ks_2samp(a, b, method="asymp")
    assert ours.statistic == pytest.approx(ref.statistic, abs=1e-12)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=0.02)
    assert ours.fired == (ours.statistic > ours.threshold)


@pytest.mark.parametrize(
    ("ref", "cur", "match"),
    [
        (np.full((5, 3), np.nan), np.ones((5, 3)), "NaN"),
        (np.ones((5, 3)), np.full((5, 3), np.inf), "NaN"),
        (np.ones((1, 3)), np.ones((5, 3)), "at least 2"),
        (np.ones((5, 3)), np.ones((0, 3)), "at least 1"),
        (np.ones((5, 3)), np.ones((5, 2)), "same dimension"),
        (np.zeros((5, 3)), np.ones((5, 3)), "zero vector"),
    ],
)
def test_bad_input_raises(ref: np.ndarray, cur: np.ndarray, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        cosine_drift(ref, cur)


def test_bad_alpha_and_empty_samples_raise() -> None:
    with pytest.raises(ValueError, match="alpha"):
        cosine_drift(np.ones((5, 3)), np.ones((5, 3)), alpha=1.0)
    with pytest.raises(ValueError, match="non-empty"):
        ks_drift([], [1.0])
