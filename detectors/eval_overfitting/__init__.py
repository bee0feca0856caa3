"""FM-5 evaluation-harness overfitting: eval success that production does not share.

An agent tuned against its eval harness keeps climbing on it while production success stays
flat or falls, usually because production inputs have moved outside what the eval set covers.
:class:`EvalOverfittingDetector` (``detector``) Holm-combines the per-version gap test, the
version trend (``version_trend``) and the input coverage (``input_coverage``).
"""

from detectors.eval_overfitting.detector import EvalOverfittingDetector, success_counts

__all__ = ["EvalOverfittingDetector", "success_counts"]
