"""Significance tools the trace detectors share.

The Holm step-down adjustment and the combination of a detector's sub-tests with it, and the
sequential Monte Carlo p-value the window permutation test
(:mod:`detectors.window_permutation`) and the resampling tests stop early with. (Parameter
checks are :mod:`detectors.params`.)

Monte Carlo p-values stop early (Besag & Clifford 1991, "Sequential Monte Carlo p-values",
Biometrika 78(2)): resampling stops at the ``h``-th resampled statistic at least as
extreme as the observed one, after ``L`` resamples, with ``p = h / L``; a run that never
reaches ``h`` uses all ``n`` and the usual ``(1 + g) / (1 + n)``. That p-value is valid
(``P(p <= u) <= u`` at every attainable ``u``), and with ``h > alpha (n + 1)``
(:func:`stop_after_for`) every decision at ``alpha`` or below is the full test's: a stop
means ``g >= h`` exceedances in all ``n``, so both p-values exceed ``alpha``. What it
saves is the common case: on stationary traffic the p-value is ~0.5 and the ~11,500
resamples a 30-day false-alert budget needs (``app.monitors.decision.calibration``) shrink to a
few dozen; only a window that looks degraded pays for the precision.
"""

from __future__ import annotations

import math
from collections.abc import MutableMapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from detectors.deadline import checkpoint


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm (1979) step-down adjusted p-values (monotone, capped at 1).

    >>> holm([0.01, 0.04, 0.03]).round(3).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=float)
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out


class HolmVerdict(NamedTuple):
    """The combined outcome of a detector's sub-tests: smallest Holm p, and any fired."""

    p_value: float
    fired: bool


def sub_test(p_value: float, effect_ok: bool, **evidence: Any) -> dict[str, Any]:
    """One sub-test for :func:`holm_verdict`: its raw p-value, effect gate and evidence."""
    return {"p_value": float(p_value), "effect_ok": bool(effect_ok), **evidence}


def holm_verdict(sub_tests: Sequence[MutableMapping[str, Any]], *, alpha: float) -> HolmVerdict:
    """Holm-combine sub-tests at ``alpha``, writing each one's ``p_holm`` and ``fired``.

    Each sub-test is a mapping with its raw ``p_value`` and, optionally, ``effect_ok`` (its
    effect-size gate, default true); it fires when its Holm-adjusted p is at most ``alpha``
    and its gate passes. The detector fires when any sub-test does, so its family-wise
    false-alarm rate is at most ``alpha`` (Holm, 1979). ``sub_tests`` must not be empty.

    >>> tests = [{"p_value": 0.004, "effect_ok": True}, {"p_value": 0.001, "effect_ok": False}]
    >>> holm_verdict(tests, alpha=0.01), tests[0]["p_holm"], tests[0]["fired"]
    (HolmVerdict(p_value=0.002, fired=True), 0.004, True)
    """
    adjusted = holm_into(sub_tests)
    for test, p in zip(sub_tests, adjusted, strict=True):
        test["fired"] = bool(p <= alpha and test.get("effect_ok", True))
    return HolmVerdict(float(adjusted.min()), any(t["fired"] for t in sub_tests))


def holm_into(family: Sequence[MutableMapping[str, Any]]) -> np.ndarray:
    """Holm-adjust a family of tests in place: each one's ``p_value`` gives its ``p_holm``.

    >>> family = [{"p_value": 0.01}, {"p_value": 0.04}]
    >>> holm_into(family).tolist(), family[1]["p_holm"]
    ([0.02, 0.04], 0.04)
    """
    adjusted = holm([t["p_value"] for t in family])
    for test, p in zip(family, adjusted, strict=True):
        test["p_holm"] = float(p)
    return adjusted


MIN_EXCEEDANCES = 10  # h's floor: p = h / L is then within ~30% of the full test's


def stop_after_for(alpha: float, n: int) -> int:
    """The exceedances ``h`` after which resampling may stop without changing any decision
    at ``alpha`` (or a smaller level, as Holm's steps use) against ``n`` resamples.

    >>> stop_after_for(0.01, 999), stop_after_for(900 / (30 * 86400) / 2, 11520)
    (11, 10)
    """
    return max(MIN_EXCEEDANCES, math.floor(alpha * (n + 1)) + 1)


class SequentialPValue:
    """Counts exceedances over chunks of resamples and stops at the ``stop_after``-th.

    >>> acc = SequentialPValue(n=1000, stop_after=3)
    >>> acc.add(np.array([False, True, False, True])), acc.add(np.array([False, True, True]))
    (False, True)
    >>> acc.p_value, acc.done
    (0.5, 6)
    >>> full = SequentialPValue(n=4, stop_after=None)
    >>> full.add(np.array([True, False, False, False])), full.p_value
    (True, 0.4)
    """

    def __init__(self, *, n: int, stop_after: int | None) -> None:
        self.n, self.stop_after = int(n), stop_after
        self.exceed = self.done = 0
        self.stopped_early = False

    def add(self, exceeds: np.ndarray) -> bool:
        """Take the next chunk's exceedance flags; True when no more resamples are needed.

        Every resampling loop passes here once per chunk: the caller's deadline is checked
        (:func:`detectors.deadline.checkpoint`)."""
        checkpoint()
        flags = np.asarray(exceeds, dtype=bool)[: self.n - self.done]
        if self.stop_after is not None:
            running = self.exceed + np.cumsum(flags)
            hit = np.flatnonzero(running >= self.stop_after)
            if hit.size:
                self.exceed, self.done = self.stop_after, self.done + int(hit[0]) + 1
                self.stopped_early = True
                return True
        self.exceed += int(np.count_nonzero(flags))
        self.done += len(flags)
        return self.done >= self.n

    @property
    def p_value(self) -> float:
        if self.stopped_early:
            return self.exceed / self.done
        return (1 + self.exceed) / (1 + self.done)

    def evidence(self) -> dict[str, Any]:
        """What a run reports about its resampling: how many were drawn and why it stopped."""
        return {"resamples": self.done, "exceedances": self.exceed,
                "stopped_early": self.stopped_early, "stop_after": self.stop_after}  # fmt: skip
