"""The trace failure-mode detectors by failure mode, and building one from a monitor's config.

Monitors store a failure mode ("FM-1" ... "FM-7") and a JSON dict of parameters; the engine
calls :func:`build_detector` with them. Unknown parameter names are refused here (a typo in a
monitor's config must not silently run the defaults); values are checked by each class.
FM-6 works on embedding streams (``detectors.drift``), not traces, and is not listed.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from detectors.compounding_errors import CompoundingErrorDetector
from detectors.eval_overfitting import EvalOverfittingDetector
from detectors.ground_truth import GroundTruthAbsenceDetector
from detectors.output_drift import OutputDriftDetector
from detectors.proxy_convergence import ProxyConvergenceDetector
from detectors.records import DetectorResult, TraceRecord
from detectors.tool_cascades import ToolCascadeDetector


class TraceDetector(Protocol):
    """What the engine calls: ``test(reference, current)`` (FM-4 also takes ``now=``)."""

    def test(
        self, reference: Sequence[TraceRecord], current: Sequence[TraceRecord]
    ) -> DetectorResult: ...


TRACE_DETECTORS: dict[str, type] = {
    "FM-1": CompoundingErrorDetector,
    "FM-2": ToolCascadeDetector,
    "FM-3": OutputDriftDetector,
    "FM-4": GroundTruthAbsenceDetector,
    "FM-5": EvalOverfittingDetector,
    "FM-7": ProxyConvergenceDetector,
}


def detector_parameters(failure_mode: str) -> dict[str, Any]:
    """The parameter names of a failure mode's detector with their defaults.

    Examples
    --------
    >>> detector_parameters("FM-4")["min_coverage"]
    0.2
    """
    cls = _detector_class(failure_mode)
    signature = inspect.signature(cls)
    return {
        name: p.default
        for name, p in signature.parameters.items()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    }


def build_detector(failure_mode: str, params: Mapping[str, Any] | None = None) -> Any:
    """A detector for ``failure_mode`` built from ``params`` (missing ones take defaults).

    Raises ``ValueError`` naming the failure mode when it is unknown, naming the parameter
    when a name is not one of the detector's, and (from the detector) naming the parameter
    when a value is out of range.

    Examples
    --------
    >>> det = build_detector("FM-7", {"alpha": 0.05})
    >>> type(det).__name__, det.alpha
    ('ProxyConvergenceDetector', 0.05)
    >>> build_detector("FM-5", {"min_gapp": 0.1})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown parameter 'min_gapp' for FM-5 (EvalOverfittingDetector); ...
    """
    params = dict(params or {})
    allowed = detector_parameters(failure_mode)
    cls = TRACE_DETECTORS[failure_mode]
    for name in sorted(params):
        if not isinstance(name, str) or name not in allowed:
            raise ValueError(
                f"unknown parameter {name!r} for {failure_mode} ({cls.__name__}); "
                f"expected some of: {', '.join(sorted(allowed))}"
            )
    return cls(**params)


def _detector_class(failure_mode: str) -> type:
    try:
        return TRACE_DETECTORS[failure_mode]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown failure_mode {failure_mode!r}; expected one of: {', '.join(TRACE_DETECTORS)}"
        ) from None
