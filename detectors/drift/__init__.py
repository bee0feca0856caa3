"""FM-6 silent-degradation drift detectors on embedding streams.

:class:`EmbeddingDriftDetector` is the registered FM-6 detector (one test per stream,
Bonferroni over the streams). Its batch tests (``cosine_drift``, ``mmd_drift``,
``ks_drift``) take a reference and a current window and return the frozen
:class:`~detectors.result.DetectorResult` every detector returns; the streaming
:class:`EWMAChart` takes one batch statistic at a time. The reflected one-sided chart's
run lengths (:mod:`detectors.drift.reflected_ewma`) serve the monitors' sequential chart.
"""

from detectors.drift.cosine import centroid_similarities, cosine_drift, ks_drift
from detectors.drift.embedding_streams import EmbeddingDriftDetector
from detectors.drift.ewma import EWMAChart, ewma_arl0, ewma_limit_for_arl0
from detectors.drift.mmd import mmd_drift
from detectors.drift.reflected_ewma import reflected_ewma_arl0, reflected_ewma_limit_for_arl0

__all__ = [
    "EWMAChart",
    "EmbeddingDriftDetector",
    "centroid_similarities",
    "cosine_drift",
    "ewma_arl0",
    "ewma_limit_for_arl0",
    "ks_drift",
    "mmd_drift",
    "reflected_ewma_arl0",
    "reflected_ewma_limit_for_arl0",
]
