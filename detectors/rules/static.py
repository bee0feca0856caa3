"""A static condition at each evaluation: the level the value reaches, and how long it held.

Levels are ``OK`` (0), ``WARNING`` (1) and ``CRITICAL`` (2), or ``NO_DATA`` (-1) for an
empty window, which the rule's ``no_data`` mode turns into a level: ``ok`` (clean),
``alerting`` (its most severe level) or ``keep`` (the level of the evaluation before, as
Grafana's "keep last state"). Comparisons are strict, as Grafana's "is above".

A level *fires* once it has held at every evaluation for ``for_seconds`` (Prometheus's
``for``): with evaluations every ``interval`` seconds that is the last
``ceil(for / interval) + 1`` of them, so a rule with no ``for`` fires on the first
evaluation that meets it, and a rule with ``for: 10m`` at a 5-minute interval on the third.
The fired level is the least level over those evaluations: a critical level held 5 minutes
inside a warning held 10 fires warning.

>>> from detectors.rules.spec import StaticCondition
>>> cond = StaticCondition(op="above", warning=0.1, critical=0.2, for_seconds=600)
>>> lv = levels(np.array([0.05, 0.15, 0.25, 0.3, np.nan, 0.3]), cond)
>>> lv.tolist()
[0, 1, 2, 2, 0, 2]
>>> held(lv, points_for(600, 300)).tolist()
[0, 0, 0, 1, 0, 0]
"""

from __future__ import annotations

import math

import numpy as np

from detectors.rules.spec import StaticCondition

NO_DATA, OK, WARNING, CRITICAL = -1, 0, 1, 2
SEVERITY = {WARNING: "warning", CRITICAL: "critical"}


def points_for(for_seconds: int, interval_seconds: int) -> int:
    """How many consecutive evaluations a level must hold to fire."""
    return math.ceil(for_seconds / interval_seconds) + 1


def raw_levels(values: np.ndarray, cond: StaticCondition) -> np.ndarray:
    """The level of each value; ``NO_DATA`` for NaN."""
    out = np.zeros(values.size, dtype=np.int64)
    seen = ~np.isnan(values)
    for level, bound in ((WARNING, cond.warning), (CRITICAL, cond.critical)):
        if bound is None:
            continue
        with np.errstate(invalid="ignore"):
            hit = values > bound if cond.op == "above" else values < bound
        out[hit & seen] = level
    out[~seen] = NO_DATA
    return out


def levels(values: np.ndarray, cond: StaticCondition) -> np.ndarray:
    """The level of each value, an empty window's set by the ``no_data`` mode."""
    top = CRITICAL if cond.critical is not None else WARNING
    return resolve_no_data(raw_levels(values, cond), cond.no_data, top=top)


def resolve_no_data(lv: np.ndarray, mode: str, *, top: int) -> np.ndarray:
    """``NO_DATA`` levels set by a ``no_data`` mode: ``ok``, ``alerting`` (``top``) or
    ``keep`` (the previous evaluation's level; OK before the first)."""
    out = lv.copy()
    empty = out == NO_DATA
    if not empty.any():
        return out
    if mode == "ok":
        out[empty] = OK
    elif mode == "alerting":
        out[empty] = top
    else:
        idx = np.where(~empty, np.arange(out.size), -1)
        last = np.maximum.accumulate(idx)
        out = np.where(last >= 0, out[np.maximum(last, 0)], OK)
    return out


def held(lv: np.ndarray, k: int) -> np.ndarray:
    """The level held over the last ``k`` evaluations at each (0 before ``k`` of them)."""
    if k <= 1:
        return lv.copy()
    out = np.zeros_like(lv)
    if lv.size < k:
        return out
    windows = np.lib.stride_tricks.sliding_window_view(lv, k)
    out[k - 1 :] = windows.min(axis=1)
    return out


def threshold_of(level: int, cond: StaticCondition) -> float | None:
    """The bound of ``level`` (the lower one configured for OK)."""
    if level >= CRITICAL and cond.critical is not None:
        return cond.critical
    if cond.warning is not None:
        return cond.warning
    return cond.critical
