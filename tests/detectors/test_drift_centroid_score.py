"""FM-6's centroid-shift evidence: N(0, 1) on stationary embeddings, positive and growing
as the vectors slide from the centroid."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from detectors.drift import EmbeddingDriftDetector
from detectors.drift.centroid_score import centroid_shift, shift_score


def _cloud(rng: np.random.Generator, n: int, shift: float = 0.0, dim: int = 32) -> np.ndarray:
    # A strong common direction and a spread of 0.1 per dimension, as normalised image and
    # text embeddings have; the slide rotates the mean towards a second direction.
    mean = np.zeros(dim)
    mean[0] = 1.0
    mean[1] = shift
    return rng.normal(scale=0.1, size=(n, dim)) + mean


def test_in_control_scores_are_standard_normal() -> None:
    rng = np.random.default_rng(7)
    z = np.array([centroid_shift(_cloud(rng, 400), _cloud(rng, 150))["z"] for _ in range(400)])
    # Mean 0 and sd 1 within sampling error, and the upper tail at its nominal rate.
    assert abs(z.mean()) < 0.15 and 0.85 < z.std() < 1.15
    assert stats.kstest(z, "norm").pvalue > 0.01
    assert 0.02 < float(np.mean(z > stats.norm.isf(0.05))) < 0.09


def test_a_slide_away_from_the_centroid_scores_higher_the_further_it_goes() -> None:
    rng = np.random.default_rng(3)
    ref = _cloud(rng, 400)
    z = [centroid_shift(ref, _cloud(rng, 150, shift))["z"] for shift in (0.0, 0.1, 0.2, 0.4)]
    assert z == sorted(z) and z[-1] > 5 and abs(z[0]) < 3


def test_several_streams_give_one_bonferroni_observation() -> None:
    one = shift_score({"a": {"p_one_sided": 0.004}})
    two = shift_score({"a": {"p_one_sided": 0.004}, "b": {"p_one_sided": 0.7}})
    assert one > two == shift_score({"a": {"p_one_sided": 0.008}})


def test_the_fm6_detector_reports_the_shift_score_whatever_its_test() -> None:
    rng = np.random.default_rng(1)
    ref = {"vlm.image": _cloud(rng, 300)}
    cur = {"vlm.image": _cloud(rng, 120, 0.4)}
    for method in ("mmd", "cosine"):
        res = EmbeddingDriftDetector(method=method, n_permutations=50).test(ref, cur)
        assert res.evidence["centroid_shift_z"] > 3
        assert set(res.evidence["centroid_shift"]) == {"vlm.image"}


def test_streams_are_subsampled_to_the_detectors_max_samples() -> None:
    """The default FM-6 monitor keeps 2,000 vectors per window and stream
    (app/monitors/defaults.py): the cap reaches every stream's MMD test."""
    rng = np.random.default_rng(4)
    ref = {"a.input": rng.normal(size=(900, 8)), "vlm.image": rng.normal(size=(120, 8))}
    cur = {"a.input": rng.normal(size=(900, 8)) + 0.5, "vlm.image": rng.normal(size=(120, 8))}
    detector = EmbeddingDriftDetector(method="mmd", alpha=0.1, n_permutations=99, max_samples=300)
    res = detector.test(ref, cur)
    streams = res.evidence["streams"]
    assert streams["a.input"]["subsampled"] and not streams["vlm.image"]["subsampled"]
    assert res.fired and res.evidence["most_drifted_stream"] == "a.input"
    with pytest.raises(ValueError, match="max_samples"):
        EmbeddingDriftDetector(method="mmd", max_samples=1)
