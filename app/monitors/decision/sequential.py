"""A sequential change detector over a monitor's run evidence: slow change that no single
run is sure of.

Each run's detector tests its current window against the baseline and returns a p-value.
A single run fires at the per-run alpha the false-alert budget allows
(:mod:`app.monitors.decision.calibration`); a slow ramp, or a change that is real but small, gives
p-values that are merely *often smallish* and never below that alpha. An EWMA chart
(Roberts 1959; limits by the Brook & Evans Markov chain, the method of Lucas & Saccucci's
1990 tables, :func:`detectors.drift.reflected_ewma_limit_for_arl0`) accumulates them:

* the observation is ``x = Φ⁻¹(1 − p)``, standard normal while the data are in control
  (a valid p-value is uniform or, for conservative tests, stochastically larger; its
  floor ``1 / (n + 1)`` caps ``x`` at about 3.8);
* consecutive runs overlap (a 2 h window every 15 min), so their x are strongly
  correlated and the chart's iid run-length tables would not hold; the chart therefore
  takes one observation per *non-overlapping* current window (the first run whose window
  ends at least one current window after the last observed end);
* observations that far apart still share part of a rolling reference (a 4 h reference
  moves 2 h per observation: half of it is shared), which correlates them positively:
  ``ρ_k = o_k c / (r (r + c))`` for windows of ``c`` and ``r`` seconds overlapping by
  ``o_k = max(0, r - k s)`` at a spacing of ``s`` (the shared part's share of the
  variance of a difference of means; 1/6 for the defaults). That widens the EWMA's
  spread by ``1 + 2 Σ_k ρ_k (1 - λ)^k`` (the variance of an EWMA of a stationary series:
  Zhang 1998, "A statistical control chart for stationary process data", Technometrics
  40:24, whose EWMAST chart widens the limits by exactly this), so the limits are widened
  by its square root. Terms that *lower* the spread (a current window that a later,
  lagged reference contains enters the two observations with opposite signs) are left
  out, which errs towards fewer false alerts. Measured: without the widening, 2 false FM-6
  alerts in 30 clean simulated days (the target is at most 1); spacing the observations
  a whole reference apart instead removes the sharing but halves how often the chart
  looks (measured: a moderate FM-4 step took 10 h instead of 8 h to alert);
* the chart is one-sided with a reflecting barrier at 0 (``z_t = max(0, ...)``, Crowder &
  Hamilton 1992, Gan 1993; :mod:`detectors.drift.reflected_ewma`) and signals on
  ``z_t > +limit`` only (small p-values). Without the barrier, a test whose p-value is
  often 1 (Fisher's exact test on few failures, FM-2; FM-7's trend tests) kept the chart
  near -1 before any change, and a ramp first had to climb back from there
  (``bench/chart_replay.py``: on the alerting bench's 12 ramps the barrier signalled
  earlier on two, 18 -> 14 h and 18 -> 16 h, and never later). The limit
  is the reflected chart's own, from its Markov chain, for an in-control ARL of
  ``ARL0 = (ERT / share) / observation period`` observations with ``share`` = 1/2, the
  chart's part of the false-alert rate (the target in-control run length: Page 1954 and
  Lorden 1971 for the run-length criterion);
* it restarts when the monitor's alert resolves.

Designs measured and not taken (``bench/chart_replay.py`` on the alerting bench's 24 h
ramps, 80 traces/h): one chart per sub-test on its raw p-value, each on its share of the
budget, and charts observing every hour or every 30 minutes on overlapping windows (the
limits widened for the overlap with :func:`variance_inflation`'s formula). Each moved
single ramps by up to 2 h either way, and none brought an FM-1, FM-2 or FM-7 ramp under
12 h: at that traffic the windows' p-values themselves are not small enough before then
(docs/benchmarks/alerting.md, "The 24 h ramp: what limits it").

Why the chart charts p-values and not a detector's own standardised statistic (FM-6's
mean cosine to the baseline centroid, :mod:`detectors.drift.centroid_score`, was tried):
with a 4-hour baseline against a 2-hour window the baseline's own estimation error is a
third of each standardised observation's variance, and every observation against that
baseline shares it, so the EWMA's spread is about twice what its run-length tables assume
(Jones, Champ & Rigdon 2001 on EWMA charts with estimated parameters). Measured: 8 false
FM-6 alerts in 7.5 clean simulated days of one seed, all opened by that chart against one
held baseline. A permutation p-value conditions on both windows and is far less tied to
the baseline's particular draw, but a baseline held for a day after an alert resolves is
still one draw for every observation: measured, a false FM-6 alert whose held baseline
opened a second one through the chart. So the chart observes only while the baseline rolls
(:func:`app.monitors.decide.verdict`).

Half the monitor's ERT budget goes to the per-run test and half to the chart (the union
bound again: the two false-alert rates add up).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scipy import special

from detectors.drift import reflected_ewma_limit_for_arl0

LAMBDA = 0.2  # weight of the newest observation: Lucas & Saccucci's range for small shifts
P_FLOOR = 1e-6
# A p of 1 (a conservative test, a sub-test that did not run) would put x at -4.8; the
# barrier at 0 already forgets it, and the clip at -2 keeps one such run from wiping a
# chart that has climbed. The limit's Markov chain carries the clip exactly.
X_MIN = -2.0


@dataclass(frozen=True)
class ChartState:
    z: float = 0.0
    t: int = 0
    last_window_end: datetime | None = None


@functools.lru_cache(maxsize=256)
def limit_width(arl0: float, lam: float = LAMBDA) -> float:
    """L for an in-control ARL of ``arl0`` observations of the reflected chart, whose
    observations are clipped at ``X_MIN``.

    >>> round(limit_width(720.0), 2)
    3.0
    """
    return reflected_ewma_limit_for_arl0(max(arl0, 2.0), lam, floor=X_MIN)


def observation_seconds(*, interval_seconds: float, current_window_seconds: float) -> float:
    """How often the chart takes an observation: once per non-overlapping window."""
    return max(float(interval_seconds), float(current_window_seconds))


def shared_reference_correlation(
    *, current_seconds: float, reference_seconds: float, spacing_seconds: float
) -> tuple[float, ...]:
    """``ρ_1, ρ_2, ...``: the correlation of observations 1, 2, ... apart through the part
    of a rolling reference they share (see the module's notes).

    >>> shared_reference_correlation(current_seconds=7200, reference_seconds=14400,
    ...                              spacing_seconds=7200)
    (0.16666666666666666,)
    >>> len(shared_reference_correlation(current_seconds=3600, reference_seconds=21600,
    ...                                  spacing_seconds=3600))
    5
    """
    c, r, s = float(current_seconds), float(reference_seconds), float(spacing_seconds)
    if s <= 0 or r <= 0:
        raise ValueError("the reference and the spacing must be positive")
    out: list[float] = []
    k = 1
    while r - k * s > 0:
        out.append((r - k * s) * c / (r * (r + c)))
        k += 1
    return tuple(out)


def variance_inflation(rho: tuple[float, ...], lam: float = LAMBDA) -> float:
    """How much wider the EWMA's variance is for observations correlated by ``rho``
    than for independent ones: ``1 + 2 Σ_k ρ_k (1 - λ)^k`` (Zhang 1998).

    >>> round(variance_inflation((1 / 6,)), 4)
    1.2667
    """
    return 1.0 + 2.0 * sum(p * (1.0 - lam) ** k for k, p in enumerate(rho, start=1))


def arl0_observations(*, ert_days: float, share: float, observation_s: float) -> float:
    """The target in-control run length, in chart observations, when the chart may use
    ``share`` of the monitor's false-alert rate (its own ERT is ``ert_days / share``).

    >>> arl0_observations(ert_days=30, share=0.5, observation_s=7200)
    720.0
    """
    return ert_days / share * 86400.0 / observation_s


def chart_for(
    *, interval_seconds: float, current_seconds: float, reference_seconds: float, ert_days: float
) -> tuple[float, float]:
    """A monitor's chart: its in-control ARL in observations (half the false-alert budget,
    :func:`arl0_observations`) and the variance inflation from the rolling reference its
    observations share (:func:`variance_inflation`).

    >>> arl0, inflation = chart_for(interval_seconds=900, current_seconds=7200,
    ...                             reference_seconds=14400, ert_days=30)
    >>> arl0, round(inflation, 3)  # 360 observations of 2 h in 30 days, on half the budget
    (720.0, 1.267)
    """
    every = observation_seconds(
        interval_seconds=interval_seconds, current_window_seconds=current_seconds
    )
    rho = shared_reference_correlation(
        current_seconds=current_seconds, reference_seconds=reference_seconds, spacing_seconds=every
    )
    arl0 = arl0_observations(ert_days=ert_days, share=0.5, observation_s=every)
    return arl0, variance_inflation(rho)


def score(p_value: float) -> float:
    """``Φ⁻¹(1 − p)``, at least ``X_MIN``: 0 at p = 0.5, 3.09 at p = 0.001.

    >>> score(0.5), round(score(0.001), 2), score(1.0)
    (0.0, 3.09, -2.0)
    """
    p = min(max(float(p_value), P_FLOOR), 1.0)
    return max(X_MIN, float(special.ndtri(1.0 - p)))


def update(
    state: ChartState | None,
    *,
    p_value: float | None,
    window_start: datetime,
    window_end: datetime,
    arl0: float,
    inflation: float = 1.0,
    lam: float = LAMBDA,
) -> tuple[ChartState, dict[str, Any]]:
    """The chart after this run, and what the run should report (``signal`` among it).

    A run whose window overlaps the last observed one, or without a p-value, leaves the
    chart as it is and reports its last state. ``inflation``: the observations' variance
    inflation (:func:`variance_inflation`); the limits widen by its square root.

    >>> from datetime import UTC, timedelta
    >>> t0 = datetime(2025, 1, 1, tzinfo=UTC)
    >>> s, ev = None, {}
    >>> for k in range(30):  # p = 0.1 every 2 h: far from any per-run alpha
    ...     start = t0 + timedelta(hours=2 * k)
    ...     s, ev = update(s, p_value=0.1, window_start=start,
    ...                    window_end=start + timedelta(hours=2), arl0=360.0)
    ...     if ev["signal"]:
    ...         break
    >>> ev["signal"], ev["t"]
    (True, 6)
    """
    state = state or ChartState()
    L = limit_width(arl0, lam)
    observe = p_value is not None and (
        state.last_window_end is None or window_start >= state.last_window_end
    )
    if observe:
        x = score(p_value)  # type: ignore[arg-type]
        state = ChartState(
            z=max(0.0, lam * x + (1.0 - lam) * state.z), t=state.t + 1, last_window_end=window_end
        )
    t = max(state.t, 1)
    # The asymptotic inflation on the time-varying width: early on fewer observation
    # pairs share a reference, so the true inflation is smaller (errs wide).
    half_width = L * math.sqrt(inflation * lam / (2.0 - lam) * (1.0 - (1.0 - lam) ** (2 * t)))
    evidence = {
        "method": "one-sided EWMA of probit(1 - p) per non-overlapping window, reflected at 0",
        "variance_inflation": inflation,
        "lam": lam,
        "L": L,
        "arl0_observations": arl0,
        "z": state.z,
        "limit": half_width,
        "t": state.t,
        "observed": observe,
        "signal": bool(state.t > 0 and state.z > half_width),
    }
    return state, evidence
