"""Telltale's calibrated change test as a rule's condition: the window against the rule's
own recent history, at the level that keeps false alerts to one per
``expected_days_between_false_alerts`` on stationary traffic.

At every step the current window is compared with the ``reference_seconds`` of buckets
just before it (a rolling reference: a change that lasts longer than it becomes the new
normal). Each metric kind is read as a mean of items with an over-dispersion the reference
measures, so traffic noisier than a textbook model does not raise false alerts:

* **ratios and means** (error rates, pass rates, coverage, loops: 0/1 items; tokens, cost
  and score per item): the window's mean against the reference's, with a variance of
  ``s2 / n + tau2 * sum(n_b^2) / n^2``: ``s2`` the reference's item variance (from its sums
  of squares; ``p(1 - p)`` for 0/1 items) and ``tau2`` how much bucket means vary around
  it beyond that (a random effect, DerSimonian and Laird 1986, from the reference's
  buckets); the tail is a Beta for 0/1 items and a Gamma for positive ones, matched to that
  mean and variance (:func:`_tail`);
* **latency quantiles**: the share of the window's values above the reference's quantile,
  a 0/1 mean as above against the reference's own share above that sketch bin;
* **counts and sums per window** (traces, tokens, cost, cost per hour): the window's total
  against ``w`` buckets of the reference, mean and variance from its buckets.

The per-step level is ``alpha = step / ERT / groups`` (the union bound over a month of
steps and over the groups, as :mod:`app.monitors.decision.calibration` derives a monitor's
per-run alpha), one-sided in the rule's ``direction`` (split in two for ``both``); a change
smaller than ``min_relative_change`` never fires, however significant (at volume a 1 %
change is significant and rarely worth a page). A window or reference too small to judge
(:data:`MIN_ITEMS`, :data:`MIN_BUCKETS`) does not fire.

>>> from detectors.rules.spec import RuleSpec
>>> from detectors.rules.series import GroupSeries, MetricSeries, window_values
>>> rng = np.random.default_rng(1)
>>> n = np.full(3000, 50.0)
>>> err = rng.binomial(50, 0.05, 3000).astype(float)
>>> err[-3:] = rng.binomial(50, 0.2, 3)  # the last 15 minutes: 20 % errors
>>> spec = RuleSpec.model_validate({"metric": "trace_error_rate", "window_seconds": 900,
...     "condition": {"type": "calibrated", "reference_seconds": 86400}})
>>> g = GroupSeries((), err, n)
>>> s = MetricSeries(0, (g,))
>>> wv = window_values(s, g, kind="ratio", window_buckets=3)
>>> idx = np.arange(2999, 2990, -1)[::-1]
>>> out = test_steps(spec, spec.condition, s, g, wv, idx, interval_seconds=300, n_groups=1)
>>> out.levels.tolist()[-4:], bool(out.p_values[-1] < 1e-6)
([0, 0, 1, 1], True)
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta as beta_dist
from scipy.stats import gamma as gamma_dist
from scipy.stats import norm

from detectors.rules import sketch
from detectors.rules.series import GroupSeries, MetricSeries, WindowValues
from detectors.rules.spec import CalibratedCondition, RuleSpec, step_seconds
from detectors.rules.static import CRITICAL, WARNING

MIN_ITEMS = 10  # items in the window (traces, calls, scores, values)
MIN_BUCKETS = 12  # reference buckets with traffic (an hour)
BLOCKS = 7  # the reference's spread is the median of this many blocks' (days, by default)


@dataclass(frozen=True)
class CalibratedSteps:
    """Per step: the window's value and size, the reference's value, the value at which
    the test fires (NaN where it cannot), its p-value, and the level fired."""

    values: np.ndarray
    weight: np.ndarray
    baseline: np.ndarray
    bound: np.ndarray
    p_values: np.ndarray
    levels: np.ndarray


def alpha_per_step(cond: CalibratedCondition, *, interval_seconds: int, n_groups: int) -> float:
    """The per-step level: one false alert per ERT over all of the rule's groups.

    >>> from detectors.rules.spec import CalibratedCondition
    >>> round(alpha_per_step(CalibratedCondition(), interval_seconds=300, n_groups=1), 7)
    0.0001157
    """
    ert = cond.expected_days_between_false_alerts * 86400.0
    return min(0.5, step_seconds(interval_seconds) / ert / max(1, n_groups))


def test_steps(
    spec: RuleSpec, cond: CalibratedCondition, series: MetricSeries, g: GroupSeries,
    wv: WindowValues, idx: np.ndarray, *, interval_seconds: int, n_groups: int,
) -> CalibratedSteps:  # fmt: skip
    """The test at each step ``idx`` (the bucket each window ends on)."""
    w, r = spec.window_buckets, cond.reference_seconds // series.bucket_seconds
    alpha = alpha_per_step(cond, interval_seconds=interval_seconds, n_groups=n_groups)
    values, weight0 = wv.values[idx], wv.weight[idx]
    g, idx = _aligned(g, series, r, idx)
    if spec.kind in ("count", "per_hour"):
        found = _totals(g.numerator, idx, w, r, alpha, cond.direction)
        if spec.kind == "per_hour":
            per_hour = 3600.0 / (w * series.bucket_seconds)
            found = tuple(x * per_hour if i < 3 else x for i, x in enumerate(found))
        mean_c, mean_r, bound, p = found
        weight = weight0
    elif spec.kind == "quantile":
        assert g.sketch is not None and spec.quantile is not None
        mean_c, mean_r, bound, p, weight = _quantile(g.sketch, series.key_lo, spec.quantile, idx,
                                                      w, r, alpha, cond.direction)  # fmt: skip
    else:
        assert g.denominator is not None
        squares = g.numerator_sq if g.numerator_sq is not None else g.numerator  # 0/1 items
        n, s, ss = (np.asarray(a, dtype=np.float64) for a in (g.denominator, g.numerator, squares))
        mean_c, mean_r, bound, p, weight = _means(n, s, ss, idx, w, r, alpha, cond.direction,
                                                  binary=g.numerator_sq is None)  # fmt: skip
    if spec.kind == "quantile":
        # Shown: the window's quantile against the reference's; tested: the share above it.
        base = _reference_quantile(g.sketch, series.key_lo, spec.quantile, idx, w, r)  # type: ignore[arg-type]
        bound = np.full(idx.size, np.nan)
    else:
        base = mean_r
    change = _relative(mean_c, mean_r)
    big = np.abs(change) >= cond.min_relative_change
    side = {"up": change > 0, "down": change < 0, "both": np.ones(idx.size, dtype=bool)}
    fired = (p <= alpha) & big & side[cond.direction]
    level = CRITICAL if cond.severity == "critical" else WARNING
    levels = np.where(fired, level, 0).astype(np.int64)
    return CalibratedSteps(values, weight, base, bound, p, levels)


def _aligned(g: GroupSeries, series: MetricSeries, r: int, idx: np.ndarray
             ) -> tuple[GroupSeries, np.ndarray]:  # fmt: skip
    """The group's arrays padded in front with empty buckets so that the reference's
    blocks fall on whole multiples of their length in epoch time (days, for a 7-day
    reference: UTC days): a run and a preview, whose series start at different times,
    then cut the same blocks and agree on the spread."""
    pad = (series.start // series.bucket_seconds) % max(1, r // BLOCKS)
    if pad == 0:
        return g, idx

    def front(a: np.ndarray | None) -> np.ndarray | None:
        if a is None:
            return None
        return np.concatenate((np.zeros((pad, *a.shape[1:]), dtype=a.dtype), a))

    return GroupSeries(g.labels, front(g.numerator), front(g.denominator),  # type: ignore[arg-type]
                       front(g.numerator_sq), front(g.sketch)), idx + pad  # fmt: skip


def _relative(cur: np.ndarray, ref: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(ref != 0, cur / np.where(ref != 0, ref, 1.0) - 1.0,
                       np.where(cur > 0, np.inf, 0.0))  # fmt: skip
    return np.nan_to_num(out, nan=0.0)


def _ranges(x: np.ndarray, idx: np.ndarray, w: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Sums over each step's window and over its reference (the ``r`` buckets before)."""
    c = np.concatenate((np.zeros((1, *x.shape[1:])), np.cumsum(x, axis=0, dtype=np.float64)))
    hi = idx + 1
    lo = np.maximum(hi - w, 0)
    ref_hi = lo
    ref_lo = np.maximum(ref_hi - r, 0)
    return c[hi] - c[lo], c[ref_hi] - c[ref_lo]


def _p(z: np.ndarray, direction: str) -> np.ndarray:
    if direction == "up":
        return np.asarray(norm.sf(z))
    if direction == "down":
        return np.asarray(norm.cdf(z))
    return np.asarray(2 * norm.sf(np.abs(z)))


def _z_alpha(alpha: float, direction: str) -> float:
    return float(norm.isf(alpha / 2 if direction == "both" else alpha))


def _tail(mean_c: np.ndarray, mean_r: np.ndarray, var_mean: np.ndarray, direction: str, *,
          binary: bool, positive: bool) -> np.ndarray:  # fmt: skip
    """The p-value of the window's mean against the reference's, from a distribution with
    the right skew: a window of 0/1 items (errors, passes, values above a quantile) whose
    rate varies between buckets is beta-binomial, its mean close to a Beta with that mean
    and variance; a mean of positive items (tokens, cost) close to a Gamma. The normal
    tail is far too thin at the levels an ERT of a month asks for (~3.7 sigma): measured,
    it made 5-7 false alerts a month on such traffic where these make about one."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if binary:
            q = mean_r * (1 - mean_r)
            k = np.where(var_mean < q, q / var_mean - 1.0, np.nan)
            a, b = mean_r * k, (1 - mean_r) * k
            ok = np.isfinite(k) & (a > 0) & (b > 0)
            up = np.where(ok, beta_dist.sf(mean_c, np.where(ok, a, 1), np.where(ok, b, 1)), np.nan)
            down = np.where(
                ok, beta_dist.cdf(mean_c, np.where(ok, a, 1), np.where(ok, b, 1)), np.nan
            )
        elif positive:
            shape = mean_r**2 / var_mean
            scale = var_mean / mean_r
            ok = np.isfinite(shape) & (shape > 0) & (scale > 0)
            up = np.where(
                ok,
                gamma_dist.sf(mean_c, np.where(ok, shape, 1), scale=np.where(ok, scale, 1)),
                np.nan,
            )
            down = np.where(
                ok,
                gamma_dist.cdf(mean_c, np.where(ok, shape, 1), scale=np.where(ok, scale, 1)),
                np.nan,
            )
        else:
            up = down = np.full(mean_c.shape, np.nan)
            ok = np.zeros(mean_c.shape, dtype=bool)
        z = (mean_c - mean_r) / np.sqrt(var_mean)
    up = np.where(ok, up, norm.sf(np.nan_to_num(z)))
    down = np.where(ok, down, norm.cdf(np.nan_to_num(z)))
    if direction == "up":
        return np.asarray(up)
    if direction == "down":
        return np.asarray(down)
    return np.asarray(np.minimum(1.0, 2 * np.minimum(up, down)))


def _means(
    n: np.ndarray, s: np.ndarray, ss: np.ndarray, idx: np.ndarray, w: int, r: int, alpha: float,
    direction: str, *, binary: bool,
) -> tuple[np.ndarray, ...]:  # fmt: skip
    """The mean-of-items test (see the module's notes)."""
    has = n > 0
    per_bucket = np.stack([n, s, ss, has.astype(float), n * n], axis=1)
    cur, ref = _ranges(per_bucket, idx, w, r)
    n_c, s_c, nn_c = cur[:, 0], cur[:, 1], cur[:, 4]
    n_r, s_r, ss_r, m_r_buckets, nn_r = ref.T
    tau2 = _step_median(_block_tau2(n, s, ss, r // BLOCKS), idx, w, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_c = np.where(n_c > 0, s_c / n_c, np.nan)
        mean_r = np.where(n_r > 0, s_r / n_r, np.nan)
        var = np.maximum(ss_r / n_r - mean_r**2, 1e-12)
        se = np.sqrt(_two_sample(var, tau2, n_c, nn_c, n_r, nn_r))
    enough = ((n_c >= MIN_ITEMS) & (m_r_buckets >= MIN_BUCKETS) & (n_r >= MIN_ITEMS)
              & _covered(n, idx, w, r))  # fmt: skip
    positive = bool((s >= 0).all())  # tokens, cost; a score may be negative
    p = np.where(enough, _tail(mean_c, mean_r, se**2, direction, binary=binary,
                               positive=positive), 1.0)  # fmt: skip
    sign = -1.0 if direction == "down" else 1.0
    bound = np.where(enough, mean_r + sign * _z_alpha(alpha, direction) * se, np.nan)
    return mean_c, mean_r, bound, p, n_c


def _two_sample(var: np.ndarray, tau2: np.ndarray, n_c: np.ndarray, nn_c: np.ndarray,
                n_r: np.ndarray, nn_r: np.ndarray) -> np.ndarray:  # fmt: skip
    """The variance of the window's mean minus the reference's: each is a weighted mean of
    bucket means (item spread ``var``, bucket spread ``tau2``); a short reference is as
    uncertain as the window and counts so."""
    with np.errstate(divide="ignore", invalid="ignore"):
        window = var / n_c + tau2 * nn_c / n_c**2
        reference = np.where(n_r > 0, var / n_r + tau2 * nn_r / n_r**2, np.inf)
    return np.asarray(window + reference)


def _covered(n: np.ndarray, idx: np.ndarray, w: int, r: int) -> np.ndarray:
    """Whether the project's history reaches at least half the reference back: a young
    project is not judged on a reference too short to know its own normal."""
    seen = np.flatnonzero(n > 0)
    if seen.size == 0:
        return np.zeros(idx.size, dtype=bool)
    return np.asarray((idx + 1 - w) - seen[0] >= r / 2)


def _block_tau2(n: np.ndarray, s: np.ndarray, ss: np.ndarray, block: int) -> np.ndarray:
    """How much bucket means vary beyond their items' spread, per block of ``block``
    buckets: DerSimonian and Laird's moment estimate from Cochran's chi-square of the
    block's bucket means around its own (NaN for an empty block)."""
    k = n.size // block
    if k == 0:
        return np.empty(0)
    nb, sb, ssb = (a[: k * block].reshape(k, block) for a in (n, s, ss))
    with np.errstate(divide="ignore", invalid="ignore"):
        big_n = nb.sum(axis=1)
        mean = sb.sum(axis=1) / big_n
        var = np.maximum(ssb.sum(axis=1) / big_n - mean**2, 1e-12)
        has = nb > 0
        resid = np.where(has, (sb - mean[:, None] * nb) ** 2 / np.where(has, nb, 1.0), 0.0)
        chi2 = resid.sum(axis=1) / var
        spread = big_n - (nb**2).sum(axis=1) / big_n
        tau2 = np.maximum(0.0, (chi2 - (has.sum(axis=1) - 1)) * var / spread)
    return np.where(big_n > 0, tau2, np.nan)


def _step_median(per_block: np.ndarray, idx: np.ndarray, w: int, r: int) -> np.ndarray:
    """Per step, the median over the :data:`BLOCKS` whole blocks (of ``r / BLOCKS`` buckets)
    that end last before its window, of a per-block estimate. A median, not the reference's pooled
    estimate: a failure inside the reference (the reference rolls on while it lasts)
    would otherwise read as noise and widen the test until it stopped firing; the median
    ignores it until it fills half the reference."""
    hi = (idx + 1 - w) // max(1, r // BLOCKS)  # one past the last whole block before it
    if per_block.size == 0:
        return np.zeros(idx.size)
    padded = np.concatenate((np.full(BLOCKS - 1, np.nan), per_block))
    windows = np.lib.stride_tricks.sliding_window_view(padded, BLOCKS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-empty stretch: no estimate
        medians = np.nanmedian(windows, axis=1)
    j = np.clip(hi - 1, -1, per_block.size - 1)
    out = np.where(j >= 0, medians[np.maximum(j, 0)], np.nan)
    return np.nan_to_num(out, nan=0.0)


def _totals(
    x: np.ndarray, idx: np.ndarray, w: int, r: int, alpha: float, direction: str
) -> tuple[np.ndarray, ...]:
    """The window's total against ``w`` of the reference's buckets."""
    per_bucket = np.stack([x, x * x, np.ones_like(x)], axis=1).astype(np.float64)
    cur, ref = _ranges(per_bucket, idx, w, r)
    total = cur[:, 0]
    m = ref[:, 2]
    block = max(1, r // BLOCKS)
    k = x.size // block
    xb = np.asarray(x[: k * block], dtype=np.float64).reshape(k, block)
    var = np.maximum(_step_median(xb.var(axis=1), idx, w, r), 1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = ref[:, 0] / m
        se = np.sqrt(w * var + w * w * var / m)  # the window's spread and the reference mean's
        z = (total - w * mu) / se
    enough = (m >= MIN_BUCKETS) & _covered(np.asarray(x), idx, w, r)
    p = np.where(enough, _p(np.nan_to_num(z), direction), 1.0)
    sign = -1.0 if direction == "down" else 1.0
    bound = np.where(enough, w * mu + sign * _z_alpha(alpha, direction) * se, np.nan)
    return total, w * mu, bound, p


def _quantile(
    counts: np.ndarray, key_lo: int, q: float, idx: np.ndarray, w: int, r: int, alpha: float,
    direction: str,
) -> tuple[np.ndarray, ...]:  # fmt: skip
    """The share of the window above the reference's ``q`` quantile bin, as a mean of 0/1
    items against the reference's own share above it."""
    if counts.shape[1] == 0:
        nan = np.full(idx.size, np.nan)
        return nan, nan, nan, np.ones(idx.size), np.zeros(idx.size)
    thresholds = _reference_bins(counts, q, idx, w, r)
    # Per bucket and bin: how many values lie above the bin (a reverse cumulative sum).
    above = np.cumsum(counts[:, ::-1], axis=1)[:, ::-1]
    above = np.concatenate((above[:, 1:], np.zeros((counts.shape[0], 1))), axis=1)
    n = counts.sum(axis=1).astype(np.float64)
    has = n > 0
    # Per step, the reference's and the window's counts above that step's bin.
    c_above = np.concatenate((np.zeros((1, above.shape[1])), np.cumsum(above, axis=0)))
    c_n = np.concatenate(([0.0], np.cumsum(n)))
    c_nn = np.concatenate(([0.0], np.cumsum(n * n)))
    c_has = np.concatenate(([0.0], np.cumsum(has)))
    hi = idx + 1
    lo = np.maximum(hi - w, 0)
    ref_lo = np.maximum(lo - r, 0)
    t = thresholds
    ok = t >= 0
    tt = np.where(ok, t, 0)
    s_c = c_above[hi, tt] - c_above[lo, tt]
    s_r = c_above[lo, tt] - c_above[ref_lo, tt]
    n_c, n_r = c_n[hi] - c_n[lo], c_n[lo] - c_n[ref_lo]
    nn_c, nn_r = c_nn[hi] - c_nn[lo], c_nn[lo] - c_nn[ref_lo]
    m_r_buckets = c_has[lo] - c_has[ref_lo]
    tau2 = _step_median(_block_exceedance_tau2(counts, above, q, r // BLOCKS), idx, w, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_c = np.where(n_c > 0, s_c / n_c, np.nan)
        mean_r = np.where(n_r > 0, s_r / n_r, np.nan)
        var = np.maximum(mean_r * (1 - mean_r), 1e-12)
        var_mean = _two_sample(var, tau2, n_c, nn_c, n_r, nn_r)
    enough = (ok & (n_c >= MIN_ITEMS) & (m_r_buckets >= MIN_BUCKETS) & (n_r >= MIN_ITEMS)
              & _covered(n, idx, w, r))  # fmt: skip
    p = np.where(enough, _tail(mean_c, mean_r, var_mean, direction, binary=True,
                               positive=True), 1.0)  # fmt: skip
    return mean_c, mean_r, np.full(idx.size, np.nan), p, n_c


def _block_exceedance_tau2(
    counts: np.ndarray, above: np.ndarray, q: float, block: int
) -> np.ndarray:
    """:func:`_block_tau2` of the share of each bucket above its block's ``q`` quantile bin."""
    k = counts.shape[0] // max(1, block)
    if k == 0 or block < 1:
        return np.empty(0)
    per_block = counts[: k * block].reshape(k, block, -1).sum(axis=1)
    cum = np.cumsum(per_block, axis=1)
    total = cum[:, -1]
    col = (cum > (q * np.maximum(total - 1, 0))[:, None]).argmax(axis=1)
    n = counts[: k * block].sum(axis=1).astype(np.float64)
    e = above[: k * block][np.arange(k * block), np.repeat(col, block)]
    return _block_tau2(n, e, e, block)


def _reference_counts(counts: np.ndarray, idx: np.ndarray, w: int, r: int) -> np.ndarray:
    c = np.concatenate((np.zeros((1, counts.shape[1])), np.cumsum(counts, axis=0)))
    lo = np.maximum(idx + 1 - w, 0)
    return c[lo] - c[np.maximum(lo - r, 0)]


def _reference_bins(counts: np.ndarray, q: float, idx: np.ndarray, w: int, r: int) -> np.ndarray:
    """The column of each step's reference ``q`` quantile (-1: an empty reference)."""
    ref = _reference_counts(counts, idx, w, r)
    cum = np.cumsum(ref, axis=1)
    total = cum[:, -1]
    rank = q * np.maximum(total - 1, 0)
    col = (cum > rank[:, None]).argmax(axis=1)
    return np.where(total > 0, col, -1)


def _reference_quantile(counts: np.ndarray, key_lo: int, q: float, idx: np.ndarray, w: int,
                        r: int) -> np.ndarray:  # fmt: skip
    if counts.shape[1] == 0:
        return np.full(idx.size, np.nan)
    return sketch.quantiles(_reference_counts(counts, idx, w, r), key_lo, q)
