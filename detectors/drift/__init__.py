"""FM-6 silent-degradation drift detectors on embedding streams.

Batch tests (``cosine_drift``, ``mmd_drift``, ``ks_drift``) take a reference and a
current window and return a frozen :class:`DriftResult`; the streaming
:class:`EWMAChart` takes one batch statistic at a time.
"""

from detectors.drift.cosine import centroid_similarities, cosine_drift, ks_drift
from detectors.drift.ewma import EWMAChart, ewma_arl0, ewma_limit_for_arl0
from detectors.drift.mmd import mmd_drift
from detectors.drift.result import DriftResult

__all__ = [
    "DriftResult",
    "EWMAChart",
    "centroid_similarities",
    "cosine_drift",
    "ewma_arl0",
    "ewma_limit_for_arl0",
    "ks_drift",
    "mmd_drift",
]
