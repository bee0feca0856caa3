"""Turn a monitor's failure mode and parameters into a detector the runner can call.

Trace modes (FM-1..FM-5, FM-7) use the classes of ``detectors.registry.TRACE_DETECTORS``
(or, while the registry is not there, the fixed module names of the detector issue). FM-6
runs on embedding streams: :class:`EmbeddingDriftDetector` applies one drift test per
stream with a Bonferroni split of ``alpha``, so a monitor over k streams keeps its
family-wise false-alarm rate.
"""

from __future__ import annotations

import importlib
import inspect
import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from detectors.records import DetectorResult, TraceRecord

FAILURE_MODES = ("FM-1", "FM-2", "FM-3", "FM-4", "FM-5", "FM-6", "FM-7")
EMBEDDING_MODES = frozenset({"FM-6"})
_MODULES = {
    "FM-1": ("detectors.compounding_errors", "CompoundingErrorDetector"),
    "FM-2": ("detectors.tool_cascades", "ToolCascadeDetector"),
    "FM-3": ("detectors.output_drift", "OutputDriftDetector"),
    "FM-4": ("detectors.ground_truth", "GroundTruthAbsenceDetector"),
    "FM-5": ("detectors.eval_overfitting", "EvalOverfittingDetector"),
    "FM-7": ("detectors.proxy_convergence", "ProxyConvergenceDetector"),
}


class DetectorConfigError(ValueError):
    """The parameters do not build a detector; the message names the parameter."""


class Detector(Protocol):
    """What the runner calls: windows in, a DetectorResult out."""

    kind: str  # "traces" | "embeddings"

    def run(self, reference: Any, current: Any, *, now: float) -> DetectorResult: ...


def trace_detector_class(failure_mode: str) -> type:
    try:
        registry = importlib.import_module("detectors.registry")
        return registry.TRACE_DETECTORS[failure_mode]  # type: ignore[no-any-return]
    except (ModuleNotFoundError, AttributeError, KeyError):
        module_name, class_name = _MODULES[failure_mode]
        try:
            return getattr(importlib.import_module(module_name), class_name)  # type: ignore[no-any-return]
        except ModuleNotFoundError:
            raise DetectorConfigError(
                f"failure_mode: the {failure_mode} detector is not installed"
            ) from None


class TraceDetector:
    kind = "traces"

    def __init__(self, failure_mode: str, params: Mapping[str, Any]) -> None:
        cls = trace_detector_class(failure_mode)
        self.impl = _construct(cls, params)
        self.takes_now = "now" in inspect.signature(self.impl.test).parameters

    def run(
        self, reference: Sequence[TraceRecord], current: Sequence[TraceRecord], *, now: float
    ) -> DetectorResult:
        if self.takes_now:
            return self.impl.test(reference, current, now=now)  # type: ignore[no-any-return]
        return self.impl.test(reference, current)  # type: ignore[no-any-return]


class EmbeddingDriftDetector:
    """FM-6 over one or more embedding streams: ``cosine`` (KS on cosine) or ``mmd``.

    Parameters: ``method`` ("cosine"), ``alpha`` (0.01, family-wise over the streams),
    ``min_samples`` (30 vectors per window and stream), and for ``mmd``
    ``n_permutations`` (200) and ``seed`` (0).
    """

    kind = "embeddings"

    def __init__(
        self,
        *,
        method: str = "cosine",
        alpha: float = 0.01,
        min_samples: int = 30,
        n_permutations: int = 200,
        seed: int = 0,
    ) -> None:
        if method not in ("cosine", "mmd"):
            raise ValueError(f"method must be 'cosine' or 'mmd', got {method!r}")
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        if int(min_samples) != min_samples or min_samples < 2:
            raise ValueError(f"min_samples must be an integer >= 2, got {min_samples!r}")
        if int(n_permutations) != n_permutations or n_permutations < 20:
            raise ValueError(f"n_permutations must be an integer >= 20, got {n_permutations!r}")
        self.method = method
        self.alpha = float(alpha)
        self.min_samples = int(min_samples)
        self.n_permutations = int(n_permutations)
        self.seed = int(seed)

    def run(
        self,
        reference: Mapping[str, np.ndarray],
        current: Mapping[str, np.ndarray],
        *,
        now: float,
    ) -> DetectorResult:
        from detectors.drift import cosine_drift, mmd_drift

        streams = [
            s
            for s in sorted(current)
            if len(current[s]) >= self.min_samples and len(reference.get(s, ())) >= self.min_samples
        ]
        sizes = {s: [len(reference.get(s, ())), len(current[s])] for s in sorted(current)}
        if not streams:
            return DetectorResult.insufficient(
                "FM-6",
                f"no embedding stream has {self.min_samples} vectors in both windows",
                streams=sizes,
            )
        alpha = self.alpha / len(streams)
        per_stream: dict[str, Any] = {}
        best: tuple[float, str, Any] | None = None
        for s in streams:
            if self.method == "cosine":
                r = cosine_drift(reference[s], current[s], alpha=alpha)
            else:
                r = mmd_drift(
                    reference[s],
                    current[s],
                    alpha=alpha,
                    n_permutations=self.n_permutations,
                    seed=self.seed,
                )
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
            failure_mode="FM-6",
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
            },
        )


def _construct(cls: type, params: Mapping[str, Any]) -> Any:
    accepted = inspect.signature(cls).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise DetectorConfigError(
                f"detector_params.{unknown[0]}: unknown parameter; "
                f"accepted: {', '.join(sorted(accepted))}"
            )
    try:
        return cls(**params)
    except (TypeError, ValueError) as exc:
        name = next((p for p in params if str(exc).startswith(p)), None)
        where = f"detector_params.{name}" if name else "detector_params"
        raise DetectorConfigError(f"{where}: {exc}") from None


def build_detector(failure_mode: str, params: Mapping[str, Any]) -> Detector:
    """A ready detector, or :class:`DetectorConfigError` naming the bad field."""
    if failure_mode not in FAILURE_MODES:
        raise DetectorConfigError(
            f"failure_mode: must be one of {', '.join(FAILURE_MODES)}, got {failure_mode!r}"
        )
    if failure_mode in EMBEDDING_MODES:
        return _construct(EmbeddingDriftDetector, params)  # type: ignore[no-any-return]
    return TraceDetector(failure_mode, params)


def finite_or_none(x: float | None) -> float | None:
    """NaN and infinities become NULL in the database and JSON."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None
