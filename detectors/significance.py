"""Significance tools the trace detectors share.

A permutation test that compares a pooled statistic between two windows by shuffling
whole units (traces or input groups) between them, the Holm step-down adjustment and the
combination of a detector's sub-tests with it, and the parameter checks every window test
makes.

Monte Carlo p-values stop early (Besag & Clifford 1991, "Sequential Monte Carlo p-values",
Biometrika 78(2)): resampling stops at the ``h``-th resampled statistic at least as
extreme as the observed one, after ``L`` resamples, with ``p = h / L``; a run that never
reaches ``h`` uses all ``n`` and the usual ``(1 + g) / (1 + n)``. That p-value is valid
(``P(p <= u) <= u`` at every attainable ``u``), and with ``h > alpha (n + 1)``
(:func:`stop_after_for`) every decision at ``alpha`` or below is the full test's: a stop
means ``g >= h`` exceedances in all ``n``, so both p-values exceed ``alpha``. What it
saves is the common case: on stationary traffic the p-value is ~0.5 and the ~11,500
resamples a 30-day false-alert budget needs (``app.monitors.calibration``) shrink to a
few dozen; only a window that looks degraded pays for the precision.
"""

from __future__ import annotations

import math
from collections.abc import Callable, MutableMapping, Sequence
from typing import Any, NamedTuple

import numpy as np


def check_window_test_params(*, alpha: float, sources: Sequence[str], n_permutations: int) -> None:
    """ValueError unless alpha is in (0, 1), sources is non-empty and the permutation
    count can reach p <= alpha with a few exceedances to spare."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not sources:
        raise ValueError("sources must name at least one trace source")
    if (n_permutations + 1) * alpha < 4:
        raise ValueError(f"n_permutations too small for alpha={alpha}: {n_permutations}")


def check_integers_at_least(*checks: tuple[str, float, int]) -> None:
    """ValueError naming the first ``(name, value, low)`` whose value is not a whole number
    at least ``low``.

    >>> check_integers_at_least(("min_traces", 30, 4), ("n_bootstrap", 50, 100))
    Traceback (most recent call last):
    ...
    ValueError: n_bootstrap must be an integer >= 100, got 50
    """
    for name, value, low in checks:
        if int(value) != value or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


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
        """Take the next chunk's exceedance flags; True when no more resamples are needed."""
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


def window_permutation_test(
    current: np.ndarray,
    reference: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    n_permutations: int,
    seed: int,
    chunk: int = 256,
    stop_after: int | None = None,
    current_weights: np.ndarray | None = None,
    reference_weights: np.ndarray | None = None,
) -> tuple[float, float]:
    """One-sided permutation test that ``statistic`` is larger in ``current``.

    ``current`` (n_c x m) and ``reference`` (n_r x m) hold one row of additive counts per
    unit of independence (a trace, an input group); ``statistic`` maps pooled sums
    (..., m) to a value (...). The test statistic is ``statistic(cur) - statistic(ref)``;
    units are shuffled between the windows (exact under exchangeable units, so
    correlation inside a unit cannot inflate the false-alarm rate). Returns
    ``(difference, p)`` with ``p = (1 + #{perm >= observed}) / (1 + n_permutations)``, or
    Besag and Clifford's ``h / L`` when ``stop_after`` (``h``) exceedances came first (the
    module's notes; the permutations drawn are the same either way, in the same order).

    ``current_weights`` / ``reference_weights`` (integers, one per row): how many units a
    row stands for, for a window given as its distinct count rows with their multiplicities
    (every trace of a window, counted in the database). The test is the one on the rows
    repeated that many times; large windows draw it by groups, small ones are expanded.
    """
    if current_weights is not None or reference_weights is not None:
        current, reference, grouped = _weighted_units(
            current, reference, current_weights, reference_weights
        )
        if grouped is not None:
            return _grouped_test(
                grouped, statistic,
                n_permutations=n_permutations, seed=seed, chunk=chunk, stop_after=stop_after,
            )  # fmt: skip
    # float32 sums are exact for counts below 2**24 and several times faster here;
    # differences within 1e-6 (relative) count as ties.
    units = np.ascontiguousarray(np.vstack([current, reference]), dtype=np.float32)
    labels = np.zeros(len(units), dtype=np.float32)
    labels[: len(current)] = 1.0
    cur_sum = labels @ units
    total = units.sum(axis=0)
    observed = float(statistic(cur_sum) - statistic(total - cur_sum))
    rng = np.random.default_rng(seed)
    current_sums = _grouped_draws(units, len(current), rng) or _shuffled_draws(units, labels, rng)
    return _resample(
        current_sums, total, observed, statistic,
        n_permutations=n_permutations, chunk=chunk, stop_after=stop_after,
    )  # fmt: skip


def _resample(
    current_sums: Callable[[int], np.ndarray],
    total: np.ndarray,
    observed: float,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    n_permutations: int,
    chunk: int,
    stop_after: int | None,
) -> tuple[float, float]:
    acc = SequentialPValue(n=n_permutations, stop_after=stop_after)
    tolerance = 1e-6 * max(1.0, abs(observed))
    # Small first chunks: on stationary data ~2h permutations decide, and a 256-row chunk
    # would cost as much as the whole early-stopped test.
    size = 32
    while acc.done < n_permutations:
        size = min(size, n_permutations - acc.done)
        sums = current_sums(size)
        diffs = statistic(sums) - statistic(total - sums)
        if acc.add(diffs >= observed - tolerance):
            break
        size = min(2 * size, chunk)
    return observed, acc.p_value


class _Groups(NamedTuple):
    """A weighted window pair by distinct rows: the current window's observed sums, the
    pooled sums, the distinct rows and how many units of each, the current window's size."""

    current_sums: np.ndarray
    total: np.ndarray
    patterns: np.ndarray
    colours: np.ndarray
    n_current: int


def _weighted_units(
    current: np.ndarray,
    reference: np.ndarray,
    current_weights: np.ndarray | None,
    reference_weights: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, _Groups | None]:
    """Weighted windows as plain unit rows (repeated) when small, else by distinct rows."""
    w_c = np.ones(len(current), np.int64) if current_weights is None else current_weights
    w_r = np.ones(len(reference), np.int64) if reference_weights is None else reference_weights
    w_c, w_r = (np.asarray(w, dtype=np.int64).reshape(-1) for w in (w_c, w_r))
    if (
        len(w_c) != len(current)
        or len(w_r) != len(reference)
        or min(w_c.min(initial=0), w_r.min(initial=0)) < 0
    ):
        raise ValueError("weights must be non-negative integers, one per row")
    if int(w_c.sum() + w_r.sum()) < GROUPED_FROM:
        return np.repeat(current, w_c, axis=0), np.repeat(reference, w_r, axis=0), None
    cur = np.asarray(current, dtype=np.float32).reshape(len(w_c), -1)
    ref = np.asarray(reference, dtype=np.float32).reshape(len(w_r), -1)
    cur_sums = w_c.astype(np.float32) @ cur
    total = cur_sums + w_r.astype(np.float32) @ ref
    patterns, inverse = np.unique(np.vstack([cur, ref]), axis=0, return_inverse=True)
    colours = np.bincount(
        inverse.reshape(-1), weights=np.concatenate([w_c, w_r]), minlength=len(patterns)
    ).astype(np.int64)
    return current, reference, _Groups(cur_sums, total, patterns, colours, int(w_c.sum()))


def _grouped_test(
    groups: _Groups,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    n_permutations: int,
    seed: int,
    chunk: int,
    stop_after: int | None,
) -> tuple[float, float]:
    """The permutation test of a weighted window pair, drawn by groups (see
    :func:`_grouped_draws`: the current window's counts of each distinct row are
    multivariate hypergeometric)."""
    rng = np.random.default_rng(seed)
    observed = float(statistic(groups.current_sums) - statistic(groups.total - groups.current_sums))

    def draw(size: int) -> np.ndarray:
        taken = rng.multivariate_hypergeometric(
            groups.colours, groups.n_current, size=size, method="marginals"
        )
        return taken.astype(np.float32) @ groups.patterns

    return _resample(
        draw, groups.total, observed, statistic,
        n_permutations=n_permutations, chunk=chunk, stop_after=stop_after,
    )  # fmt: skip


# From this many units a window may be drawn by groups of identical rows (below, a shuffle
# costs under a millisecond a chunk). Windows at volume hold tens of thousands of traces
# whose count rows take a few hundred distinct values: shuffling 40,000 labels for every
# permutation was 13 of FM-2's 15 s at 10,000 traces/h (bench/scale.py).
GROUPED_FROM = 5000


def _shuffled_draws(
    units: np.ndarray, labels: np.ndarray, rng: np.random.Generator
) -> Callable[[int], np.ndarray]:
    """``size`` permutations' current-window sums: the labels shuffled over the units."""

    def draw(size: int) -> np.ndarray:
        masks = np.tile(labels, (size, 1))
        rng.permuted(masks, axis=1, out=masks)
        return masks @ units

    return draw


def _grouped_draws(
    units: np.ndarray, n_current: int, rng: np.random.Generator
) -> Callable[[int], np.ndarray] | None:
    """The same permutation distribution, drawn by groups of identical rows, or None where
    that would not be cheaper.

    A permutation puts a uniformly random ``n_current`` of the units in the current window;
    its sums depend only on how many units of each distinct row it takes, and those counts
    are multivariate hypergeometric (``n_current`` draws without replacement from an urn
    with a colour per distinct row). Drawing the counts costs O(distinct rows) instead of
    O(units) per permutation; the test is exactly the same test.
    """
    if len(units) < GROUPED_FROM:
        return None
    patterns, inverse = np.unique(units, axis=0, return_inverse=True)
    if 4 * len(patterns) > len(units):
        return None
    colours = np.bincount(inverse.reshape(-1), minlength=len(patterns)).astype(np.int64)

    def draw(size: int) -> np.ndarray:
        taken = rng.multivariate_hypergeometric(colours, n_current, size=size, method="marginals")
        return taken.astype(np.float32) @ patterns

    return draw
