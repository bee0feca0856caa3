"""FM-4 long-horizon ground-truth absence: label coverage, label delay, label-free accuracy.

When outcomes arrive days after the decision, error rates on labeled traffic say little
about today's traffic. :class:`GroundTruthAbsenceDetector` (``detector``) reports how much
of the current window is labeled per cohort (``label_coverage``) and estimates the current
accuracy without waiting for the labels (``calibration``).
"""

from detectors.ground_truth.detector import GroundTruthAbsenceDetector
from detectors.ground_truth.label_coverage import label_coverage, visible_label

__all__ = ["GroundTruthAbsenceDetector", "label_coverage", "visible_label"]
