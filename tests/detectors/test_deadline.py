"""A detector's resampling stops at its caller's deadline (detectors.deadline), so a
detector past its time limit ends within a chunk instead of computing on for minutes."""

from __future__ import annotations

import time

import numpy as np
import pytest

from detectors.deadline import DetectorCancelled, deadline
from detectors.drift import mmd_drift
from detectors.drift.embedding_streams import MAX_MMD_SAMPLES, EmbeddingDriftDetector
from detectors.params import MAX_RESAMPLES, DetectorParameterError
from detectors.proxy_convergence.detector import ProxyConvergenceDetector


def test_an_mmd_test_that_would_run_for_minutes_stops_at_its_deadline() -> None:
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(3000, 64)).astype(np.float32)
    cur = (rng.normal(size=(3000, 64)) + 0.2).astype(np.float32)  # drifted: no early stop
    started = time.monotonic()
    with pytest.raises(DetectorCancelled), deadline(0.3):
        mmd_drift(ref, cur, backend="numpy", n_permutations=5_000,
                  max_samples=3000)  # fmt: skip
    # 5,000 permutations of a 6,000² kernel: ~2·10¹¹ operations, minutes on this machine
    assert time.monotonic() - started < 15


def test_without_a_deadline_the_same_test_is_unchanged() -> None:
    rng = np.random.default_rng(1)
    ref, cur = rng.normal(size=(200, 8)), rng.normal(size=(200, 8))
    with deadline(3600):
        inside = mmd_drift(ref, cur, backend="numpy", n_permutations=300)
    outside = mmd_drift(ref, cur, backend="numpy", n_permutations=300)
    assert inside == outside


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: EmbeddingDriftDetector(n_permutations=1_000_000_000), "n_permutations"),
        (lambda: EmbeddingDriftDetector(max_samples=MAX_MMD_SAMPLES + 1), "max_samples"),
        (lambda: ProxyConvergenceDetector(n_permutations=MAX_RESAMPLES + 1), "n_permutations"),
    ],
)
def test_resampling_parameters_have_upper_bounds(build: object, field: str) -> None:
    with pytest.raises(DetectorParameterError) as refused:
        build()  # type: ignore[operator]
    assert refused.value.parameter == field
