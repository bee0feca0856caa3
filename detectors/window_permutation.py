"""The window permutation test the trace detectors share: a pooled statistic compared
between two windows by shuffling whole units (traces or input groups) between them.

Units are rows of additive counts. Large windows are drawn by groups of identical rows
(the same permutation distribution, multivariate hypergeometric counts per distinct row),
and a window may come as its distinct rows with multiplicities (every trace of a window,
counted in the database: :mod:`detectors.step_profiles`). Resampling stops early as
:class:`detectors.significance.SequentialPValue` says. :class:`WindowTest` is the
parameters FM-1, FM-2 and FM-3 share to run it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from detectors.params import (
    DetectorParameterError,
    Parameters,
    Resampled,
    Seeded,
    TraceSources,
)
from detectors.significance import SequentialPValue, stop_after_for


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


@dataclass(frozen=True, kw_only=True)
class WindowTest(TraceSources, Resampled, Seeded, Parameters):
    """The parameters of a trace-permutation window test (FM-1, FM-2, FM-3).

    Parameters
    ----------
    alpha : float, default 0.01
    n_permutations : int, default 999
        Resamples at the most (the test stops early: :mod:`detectors.significance`);
        ``(n_permutations + 1) * alpha`` must be at least 4.
    seed : int, default 0
    sources : sequence of str, default ("production",)
        Trace sources analysed (some of production, eval, shadow); eval runs and shadow
        replays are left out by default.
    """

    def _check_together(self) -> None:
        # A permutation p-value is at least 1 / (n + 1): leave room for a few exceedances.
        if (self.n_permutations + 1) * self.alpha < 4:
            raise DetectorParameterError(
                f"n_permutations too small for alpha={self.alpha}: {self.n_permutations}",
                parameter="n_permutations",
            )

    def permutation_test(
        self,
        current: np.ndarray,
        reference: np.ndarray,
        statistic: Callable[[np.ndarray], np.ndarray],
        *,
        current_weights: np.ndarray | None = None,
        reference_weights: np.ndarray | None = None,
    ) -> tuple[float, float]:
        """:func:`window_permutation_test` with this test's resamples and seed, stopping
        early where no decision at ``alpha`` can change (:func:`stop_after_for`)."""
        return window_permutation_test(
            current, reference, statistic,
            n_permutations=self.n_permutations, seed=self.seed,
            stop_after=stop_after_for(self.alpha, self.n_permutations),
            current_weights=current_weights, reference_weights=reference_weights,
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
