"""The detectors by failure mode, and building one from a monitor's config.

Monitors store a failure mode ("FM-1" ... "FM-7") and a JSON dict of parameters; the engine
calls :func:`build_detector` with them and then, whatever the mode,
``detector.test(reference, current, now=now)``. What the windows hold is said by the
detector's ``needs`` (:mod:`detectors.needs`): trace records for every mode but FM-6,
whose windows map an embedding stream's name to its vectors. Unknown parameter names are
refused here (a typo in a monitor's config must not silently run the defaults); values are
checked against the bounds each detector declares (:mod:`detectors.params`); either way the
:class:`DetectorParameterError` names the parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from detectors.compounding_errors import CompoundingErrorDetector
from detectors.drift.embedding_streams import EmbeddingDriftDetector
from detectors.eval_overfitting import EvalOverfittingDetector
from detectors.first_hours import FirstHoursDetector
from detectors.ground_truth import GroundTruthAbsenceDetector
from detectors.issue_rates import IssueRateDetector
from detectors.judge_drift import JudgeDriftDetector
from detectors.needs import COUNT_NEEDS, ISSUE_NEEDS, STREAM_NEEDS
from detectors.outcomes import OutcomeRegressionDetector
from detectors.output_drift import OutputDriftDetector
from detectors.params import DetectorParameterError, parameter_defaults
from detectors.proxy_convergence import ProxyConvergenceDetector
from detectors.result import DetectorResult
from detectors.rules.detector import MODE as RULE
from detectors.rules.detector import RuleDetector
from detectors.silence import SilenceDetector
from detectors.tool_cascades import ToolCascadeDetector


class Detector(Protocol):
    """What the engine calls, for every failure mode."""

    needs: tuple[str, ...]  # names from detectors.needs.NEEDS
    # Counts the service must read over every trace of a sampled window ("labels": FM-4's
    # coverage and delays), beside the sampled records.
    window_counts: tuple[str, ...]
    # Whether a firing run is told if the error-rate monitors are quiet (FM-6: "silent").
    checks_silence: bool

    def test(self, reference: Any, current: Any, *, now: float | None = None) -> DetectorResult:
        """Reference window vs current window, as of ``now`` (epoch seconds)."""
        ...


DETECTORS: dict[str, type[Any]] = {
    "FM-1": CompoundingErrorDetector,
    "FM-2": ToolCascadeDetector,
    "FM-3": OutputDriftDetector,
    "FM-4": GroundTruthAbsenceDetector,
    "FM-5": EvalOverfittingDetector,
    "FM-6": EmbeddingDriftDetector,
    "FM-7": ProxyConvergenceDetector,
    # Not one of the seven failure modes: the outcomes every mode ends in (task success,
    # error rates, latency), watched by default (detectors/outcomes.py).
    "OUTCOME": OutcomeRegressionDetector,
    # Nor this: traffic, or a signal of it, that stops (detectors/silence.py). Its windows
    # are arrival counts, not records.
    "SILENCE": SilenceDetector,
    # Static guards against a project's first hour, until the calibrated monitors speak
    # (detectors/first_hours.py).
    "EARLY": FirstHoursDetector,
    # An online evaluator's judge that agrees less with the labels of the objective it
    # predicts (detectors/judge_drift.py); a monitor per such evaluator, made with it.
    "JUDGE": JudgeDriftDetector,
    # Failure issues (app/issues) that are new or hit a larger share of traces than they
    # did (detectors/issue_rates.py): one alert per issue. Its windows are issue counts.
    "ISSUES": IssueRateDetector,
}


# Alert rules a team writes (detectors/rules): a monitor family beside the failure modes,
# whose parameters are one nested rule (validated by its own spec, naming the field) and
# the interval its ``for`` counts steps of, which a run takes from its monitor.
RULE_PARAMETERS: dict[str, Any] = {"rule": None, "interval_seconds": 300}


def window_counts_of(mode: str) -> tuple[str, ...]:
    """What the mode's detector declares the service must count over a whole sampled window
    (nothing for a mode not registered: a test's stand-in detector)."""
    cls = DETECTORS.get(mode)
    return tuple(cls.window_counts) if cls is not None else ()


def needs_of(mode: str) -> tuple[str, ...]:
    """What the mode's detector reads (:mod:`detectors.needs`), alert rules included."""
    return tuple(RuleDetector.needs if mode == RULE else _detector_class(mode).needs)


def judges_own_history(mode: str) -> bool:
    """Whether the mode's detector needs no monitor baseline: it reads its own history and
    decides itself when that is enough (an alert rule: a static one from its first whole
    window, a calibrated one once its history reaches half its reference back)."""
    return mode == RULE


def alerts_per_group(mode: str) -> bool:
    """Whether the mode's detector declares one verdict per group, each raising its own
    alert (an alert rule's ``group_by``; SILENCE's agents, streams and score names)."""
    if mode == RULE:
        return True
    cls = DETECTORS.get(mode)
    return bool(getattr(cls, "alerts_per_group", False)) if cls is not None else False


def checks_silence(mode: str) -> bool:
    """Whether the mode's detector declares that a firing run is told if the error-rate
    monitors are quiet (FM-6's "silent" drift)."""
    cls = DETECTORS.get(mode)
    return bool(cls.checks_silence) if cls is not None else False


# The modes whose windows are trace records (FM-6 reads embedding streams, SILENCE counts,
# ISSUES issue counts).
TRACE_DETECTORS: dict[str, type[Any]] = {
    mode: cls
    for mode, cls in DETECTORS.items()
    if not (STREAM_NEEDS | COUNT_NEEDS | ISSUE_NEEDS) & set(cls.needs)
}


def detector_parameters(failure_mode: str) -> dict[str, Any]:
    """The parameter names of a failure mode's detector with their defaults.

    Examples
    --------
    >>> detector_parameters("FM-4")["min_coverage"]
    0.2
    >>> detector_parameters("FM-6")["method"]
    'cosine'
    >>> sorted(detector_parameters("RULE"))
    ['interval_seconds', 'rule']
    """
    if failure_mode == RULE:
        return dict(RULE_PARAMETERS)
    return parameter_defaults(_detector_class(failure_mode))


def build_detector(failure_mode: str, params: Mapping[str, Any] | None = None) -> Any:
    """A detector for ``failure_mode`` built from ``params`` (missing ones take defaults).

    Raises ``ValueError`` naming the failure mode when it is unknown, and
    :class:`DetectorParameterError` (a ``ValueError``) naming the parameter when a name is
    not one of the detector's or a value is not one its declaration allows.

    Examples
    --------
    >>> det = build_detector("FM-7", {"alpha": 0.05})
    >>> type(det).__name__, det.alpha, det.needs[0]
    ('ProxyConvergenceDetector', 0.05, 'proxy_scores')
    >>> build_detector("FM-5", {"min_gapp": 0.1})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    detectors.params.DetectorParameterError: unknown parameter 'min_gapp' for FM-5 ...
    >>> try:
    ...     build_detector("FM-6", {"method": "mmd", "alpha": 1.5})
    ... except DetectorParameterError as exc:
    ...     exc.parameter
    'alpha'
    """
    params = dict(params or {})
    if failure_mode == RULE:
        return RuleDetector.from_params(params)
    allowed = detector_parameters(failure_mode)
    cls = DETECTORS[failure_mode]
    for name in sorted(params, key=str):
        if not isinstance(name, str) or name not in allowed:
            raise DetectorParameterError(
                f"unknown parameter {name!r} for {failure_mode} ({cls.__name__}); "
                f"expected some of: {', '.join(sorted(allowed))}",
                parameter=name if isinstance(name, str) else None,
            )
    return cls(**params)


def _detector_class(failure_mode: str) -> type[Any]:
    try:
        return DETECTORS[failure_mode]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown failure_mode {failure_mode!r}; expected one of: {', '.join(DETECTORS)}"
        ) from None
