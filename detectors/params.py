"""Detector parameters, declared once with their bounds and checked in one place.

A detector is a frozen dataclass of its parameters: each field is declared with
:func:`param` (its default, and the bounds or choices a value must keep), and
:class:`Parameters` checks and casts every field once, when the detector is built, raising
:class:`DetectorParameterError` that names the field. The parameters several detectors
share are declared once here: ``alpha`` (on :class:`Parameters`), ``seed``
(:class:`Seeded`), ``n_permutations`` (:class:`Resampled`) and ``sources``
(:class:`TraceSources`), and the trace-permutation window tests' together
(:class:`detectors.window_permutation.WindowTest`); a detector whose statistic needs other
bounds declares the field again with them.

Examples
--------
>>> from dataclasses import dataclass
>>> @dataclass(frozen=True, kw_only=True)
... class Demo(Seeded, Parameters):
...     min_traces: int = param(30, ge=2)
...     min_lift: float = param(1.5, ge=1.0)
>>> Demo(min_traces=40.0).min_traces, Demo().alpha
(40, 0.01)
>>> Demo(min_lift=0.5)
Traceback (most recent call last):
...
detectors.params.DetectorParameterError: min_lift must be >= 1.0, got 0.5
>>> try:
...     Demo(alpha=1.5)
... except DetectorParameterError as exc:
...     exc.parameter
'alpha'
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from detectors.records import TRACE_SOURCES, TraceRecord


class DetectorParameterError(ValueError):
    """A detector's parameters are refused.

    ``parameter`` names the parameter at fault, or is None when the message cannot be tied
    to one.
    """

    def __init__(self, message: str, *, parameter: str | None) -> None:
        super().__init__(message)
        self.parameter = parameter


@dataclass(frozen=True)
class Bounds:
    """What a parameter's value must keep: its type (from the default) and limits.

    ``kind`` is ``bool``, ``int``, ``float``, ``str`` (one of ``choices``) or ``frozenset``
    (a non-empty set of strings, some of ``choices``: a tuple default).
    """

    kind: type
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    choices: tuple[str, ...] | None = None

    def check(self, name: str, value: Any) -> Any:
        """``value`` cast to the declared type, or :class:`DetectorParameterError`."""
        if self.kind is bool:
            if not isinstance(value, bool):
                raise _refused(name, f"must be a bool, got {value!r}")
            return value
        if self.kind is str:
            if value not in (self.choices or ()):
                raise _refused(name, f"must be one of {_listed(self.choices)}, got {value!r}")
            return value
        if self.kind is frozenset:
            return self._check_set(name, value)
        number = None if isinstance(value, bool) else _real(value)
        if (
            number is None
            or (self.kind is int and not (math.isfinite(number) and number.is_integer()))
            or not self._within(number)
        ):
            raise _refused(name, f"must be {self._describe()}, got {value!r}")
        if self.kind is int:  # an integral value as is: a float would round a large seed
            return int(value) if isinstance(value, numbers.Integral) else int(number)
        return number

    def _within(self, value: float) -> bool:
        # Written as "not below", so that NaN is refused wherever there is a bound.
        return (
            (self.ge is None or value >= self.ge)
            and (self.gt is None or value > self.gt)
            and (self.le is None or value <= self.le)
            and (self.lt is None or value < self.lt)
        )

    def _describe(self) -> str:
        low = (self.ge, "[", ">=") if self.ge is not None else (self.gt, "(", ">")
        high = (self.le, "]", "<=") if self.le is not None else (self.lt, ")", "<")
        what = "an integer " if self.kind is int else ""
        if low[0] is not None and high[0] is not None:
            return f"{what}in {low[1]}{low[0]}, {high[0]}{high[1]}"
        if low[0] is not None:
            return f"{what}{low[2]} {low[0]}"
        if high[0] is not None:
            return f"{what}{high[2]} {high[0]}"
        return what.strip() or "a number"

    def _check_set(self, name: str, value: Any) -> frozenset[str]:
        if isinstance(value, str) or not isinstance(value, Iterable):
            raise _refused(name, f"must be a list of {_listed(self.choices)}, got {value!r}")
        chosen = frozenset(value)
        if not chosen:
            raise _refused(name, f"must name at least one of {_listed(self.choices)}")
        unknown = sorted(str(v) for v in chosen if v not in (self.choices or ()))
        if unknown:
            raise _refused(
                name, f"must be some of {_listed(self.choices)}, got {', '.join(unknown)}"
            )
        return chosen


def param(
    default: Any,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    choices: Collection[str] | None = None,
) -> Any:
    """A parameter field: its default (whose type is the parameter's) and its bounds.

    A tuple default declares a set of ``choices`` (the field then holds a frozenset).
    """
    kind = frozenset if isinstance(default, tuple) else type(default)
    bounds = Bounds(kind, ge, gt, le, lt, None if choices is None else tuple(choices))
    return dataclasses.field(default=default, metadata={"bounds": bounds})


@dataclass(frozen=True, kw_only=True)
class Parameters:
    """The base of every detector: ``alpha``, and the one check of all the fields.

    Parameters
    ----------
    alpha : float, default 0.01
        The false-alarm rate per run, in (0, 1).
    """

    alpha: float = param(0.01, gt=0.0, lt=1.0)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            bounds = f.metadata.get("bounds")
            if bounds is not None:
                object.__setattr__(self, f.name, bounds.check(f.name, getattr(self, f.name)))
        self._check_together()

    def _check_together(self) -> None:
        """Checks that tie several parameters together (a detector that has some adds them)."""


@dataclass(frozen=True, kw_only=True)
class Seeded:
    """``seed``: the seed of the detector's resampling (runs are reproducible)."""

    seed: int = param(0, ge=0)


# Resamples a test may be set to draw at the most: work and memory per run stay finite
# (the deadline of detectors.deadline stops a run sooner still).
MAX_RESAMPLES = 100_000


@dataclass(frozen=True, kw_only=True)
class Resampled:
    """``n_permutations``: how many resamples a permutation test draws at the most."""

    n_permutations: int = param(999, ge=1, le=MAX_RESAMPLES)


@dataclass(frozen=True, kw_only=True)
class TraceSources:
    """``sources``: which trace sources the detector reads (production, eval, shadow)."""

    sources: frozenset[str] = param(("production",), choices=TRACE_SOURCES)

    def of_sources(self, window: Iterable[TraceRecord]) -> list[TraceRecord]:
        """The window's traces from ``sources``."""
        return [t for t in window if t.source in self.sources]


def parameter_defaults(cls: type) -> dict[str, Any]:
    """The parameter names of a detector class with their defaults (tuples for sets).

    >>> parameter_defaults(TraceSources)["sources"]
    ('production',)
    """
    return {f.name: f.default for f in dataclasses.fields(cls) if "bounds" in f.metadata}


def _real(value: Any) -> float | None:
    return float(value) if isinstance(value, numbers.Real) else None


def _refused(name: str, why: str) -> DetectorParameterError:
    return DetectorParameterError(f"{name} {why}", parameter=name)


def _listed(choices: Iterable[str] | None) -> str:
    return ", ".join(repr(c) for c in choices or ())
