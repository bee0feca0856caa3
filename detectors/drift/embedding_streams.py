"""FM-6 silent degradation over one or more embedding streams: one drift test per stream.

A monitor may watch several streams (``vlm.*``); testing each at ``alpha / k`` (Bonferroni)
keeps the monitor's family-wise false-alarm rate at ``alpha`` whatever the streams'
dependence. Beside the test, every run reports ``centroid_shift_z``: the current window's
fall in mean cosine similarity to the baseline centroid, in standard errors
(:mod:`detectors.drift.centroid_score`): how far the vectors slid, for the alert page. It
is evidence, not the test or the monitor's chart observation (``app.monitors.decision.sequential``
says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from detectors.drift.centroid_score import centroid_shift, shift_score
from detectors.drift.cosine import cosine_drift
from detectors.drift.mmd import mmd_drift
from detectors.params import MAX_RESAMPLES, Parameters, Resampled, Seeded, param
from detectors.result import DetectorResult
from detectors.significance import stop_after_for

FAILURE_MODE = "FM-6"
METHODS = ("cosine", "mmd")


# The MMD test's bound on rows: a run's kernel stays finite. Its permutations are bounded
# as every resampled test's (MAX_RESAMPLES; calibration asks up to 50,000 for a month's
# false-alert budget at short intervals), and the deadline (detectors.deadline) stops it.
MAX_MMD_SAMPLES = 10_000


@dataclass(frozen=True, kw_only=True)
class EmbeddingDriftDetector(Resampled, Seeded, Parameters):
    """FM-6: drift in embedding streams, by ``cosine`` (KS on cosine) or ``mmd``.

    ``reference`` and ``current`` map a stream name to its window's ``(n, d)`` vectors.
    Every stream with at least ``min_samples`` vectors in both windows is tested at
    ``alpha / k`` (k such streams) with :func:`~detectors.drift.cosine_drift` or
    :func:`~detectors.drift.mmd_drift`; the detector fires when any stream does. The result
    reports the most drifted stream (smallest p): its ``statistic`` and ``threshold``, and
    ``p_value`` its Bonferroni-adjusted p ``min(1, k p)``; ``evidence["streams"]`` holds
    every stream's test. No stream with enough vectors gives ``insufficient_data``.

    Parameters
    ----------
    method : {"cosine", "mmd"}, default "cosine"
    alpha : float, default 0.01
        Family-wise false-alarm rate over the streams.
    min_samples : int, default 30
        Fewest vectors per window and stream.
    n_permutations : int, default 200
        Permutations of the MMD test.
    max_samples : int, default 5000
        Rows per window and stream the MMD test keeps (a seeded subsample beyond it). Its
        cost is ``(2 max_samples)²`` per permutation: where a drift is real the test cannot
        stop early and draws every permutation the false-alert budget asks for.
    seed : int, default 0
        Seeds the MMD test's subsampling and permutations.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> ref = {"vlm.image": rng.normal(size=(200, 8)), "vlm.text": rng.normal(size=(200, 8))}
    >>> cur = {"vlm.image": rng.normal(size=(150, 8)) * 0.5, "vlm.text": rng.normal(size=(150, 8))}
    >>> res = EmbeddingDriftDetector(method="mmd").test(ref, cur, now=0.0)
    >>> res.fired, res.evidence["most_drifted_stream"], res.evidence["bonferroni_streams"]
    (True, 'vlm.image', 2)
    >>> EmbeddingDriftDetector().test(ref, {"vlm.image": ref["vlm.image"][:10]}).status
    'insufficient_data'
    """

    needs: ClassVar[tuple[str, ...]] = ("stream_embeddings",)
    window_counts: ClassVar[tuple[str, ...]] = ()
    # A firing run is told whether the error-rate monitors are quiet (a silent drift).
    checks_silence: ClassVar[bool] = True

    method: str = param("cosine", choices=METHODS)
    min_samples: int = param(30, ge=2)
    # The kernel holds (2 max_samples)² float32 (1.6 GB at the bound).
    n_permutations: int = param(200, ge=20, le=MAX_RESAMPLES)
    max_samples: int = param(5000, ge=2, le=MAX_MMD_SAMPLES)

    def test(
        self,
        reference: Mapping[str, np.ndarray],
        current: Mapping[str, np.ndarray],
        *,
        now: float | None = None,
    ) -> DetectorResult:
        """Test every stream of ``current`` against ``reference``; ``now`` is not used."""
        streams = [
            s
            for s in sorted(current)
            if len(current[s]) >= self.min_samples and len(reference.get(s, ())) >= self.min_samples
        ]
        sizes = {s: [len(reference.get(s, ())), len(current[s])] for s in sorted(current)}
        if not streams:
            return DetectorResult.insufficient(
                FAILURE_MODE,
                f"no embedding stream has {self.min_samples} vectors in both windows",
                streams=sizes,
            )
        alpha = self.alpha / len(streams)
        per_stream: dict[str, Any] = {}
        shifts: dict[str, dict[str, float]] = {}
        best: tuple[float, str, DetectorResult] | None = None
        for s in streams:
            shifts[s] = centroid_shift(reference[s], current[s])
            r = self._stream_test(reference[s], current[s], alpha)
            p = 1.0 if r.p_value is None else float(r.p_value)
            per_stream[s] = {
                "statistic": r.statistic,
                "threshold": r.threshold,
                "p_value": r.p_value,
                "fired": r.fired,
                **r.evidence,
            }
            if best is None or p < best[0]:
                best = (p, s, r)
        assert best is not None
        p_min, stream, r = best
        return DetectorResult(
            failure_mode=FAILURE_MODE,
            statistic=float(r.statistic),
            threshold=float(r.threshold),
            p_value=min(1.0, p_min * len(streams)),
            fired=any(v["fired"] for v in per_stream.values()),
            evidence={
                "method": self.method,
                "alpha": self.alpha,
                "bonferroni_streams": len(streams),
                "most_drifted_stream": stream,
                "streams": per_stream,
                "centroid_shift_z": shift_score(shifts),
                "centroid_shift": shifts,
            },
        )

    def _stream_test(
        self, reference: np.ndarray, current: np.ndarray, alpha: float
    ) -> DetectorResult:
        if self.method == "cosine":
            return cosine_drift(reference, current, alpha=alpha)
        return mmd_drift(
            reference, current, alpha=alpha, n_permutations=self.n_permutations, seed=self.seed,
            stop_after=stop_after_for(alpha, self.n_permutations), max_samples=self.max_samples,
        )  # fmt: skip
