"""A monitor's false-alert budget in wall-clock time -> the per-run test level it runs at.

A monitor is configured by its *expected time between false alerts* on stationary traffic
(ERT, ``expected_days_between_false_alerts``, default 30 days), not by a per-run α: a
monitor re-tests every ``interval_seconds``, so a per-run α of 0.01 at a 15-minute
interval is ~1 false alert a day, and halving the interval doubles it.

The derivation (the union bound, as alibi-detect frames the ERT of its online detectors,
which are likewise thresholded so that the run length to a false detection is at least
the ERT; Lorden 1971 and Page 1954 for the run-length view of sequential tests):

* over the ERT the monitor runs ``N = ERT / interval`` times;
* a false alert episode needs at least one run that fires from a clean state, so
  ``E[false episodes in ERT] <= sum_i P(run i fires) = N * alpha_run`` whatever the
  dependence between runs (overlapping windows, a shared frozen baseline);
* setting ``N * alpha_run = 1`` gives ``alpha_run = interval / ERT``: at most one false
  episode per ERT on average, and the same false alerts *per day* at any interval.

It is conservative in two ways, both measured by ``bench/alerting.py`` rather than
assumed: overlapping current windows make consecutive runs fire together (one episode,
several fired runs), and a ``for``-style persistence requirement only removes episodes.
We do not loosen ``alpha_run`` for either: the gain depends on the correlation between
runs, which depends on the traffic, and the bound above does not.

A resampling p-value is never below ``1 / (n + 1)``; with ``n`` resamples and
``alpha_run < 1 / (n + 1)`` a detector could never fire. :func:`calibrated_params`
raises the resampling count so that ``RESOLUTION`` resampled statistics may exceed the
observed one at the smallest attainable significant p-value (p-values stay valid at any
count; more resamples only cost time). Past ``MAX_RESAMPLES`` (an ERT of ~130 days at a
15-minute interval) a derived alpha is floored at what that count can reach: the run's
threshold and evidence show the level it really ran at.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.models import Monitor

DEFAULT_ERT_DAYS = 30.0
# Resampled statistics that may exceed the observed one at p = alpha, the library's own
# rule (detectors.params.WindowTest refuses (n + 1) * alpha < 4).
RESOLUTION = 4
RESAMPLING_PARAMS = ("n_permutations", "n_bootstrap")
MAX_RESAMPLES = 50_000


def alpha_per_run(*, ert_days: float, interval_seconds: float) -> float:
    """The per-run level that keeps false alerts at one per ERT (union bound).

    >>> round(alpha_per_run(ert_days=30, interval_seconds=900), 6)
    0.000347
    >>> alpha_per_run(ert_days=30, interval_seconds=1800) / alpha_per_run(ert_days=30, interval_seconds=900)
    2.0
    """
    if not (ert_days > 0 and math.isfinite(ert_days)):
        raise ValueError(f"expected_days_between_false_alerts must be > 0, got {ert_days!r}")
    if interval_seconds <= 0:
        raise ValueError(f"interval_seconds must be > 0, got {interval_seconds!r}")
    return min(0.5, float(interval_seconds) / (float(ert_days) * 86400.0))


def resamples_for(alpha: float) -> int:
    """The least resampling count at which a p-value of ``alpha`` is attainable with margin.

    >>> resamples_for(0.01)
    400
    >>> resamples_for(900 / (30 * 86400))
    11520
    """
    return min(MAX_RESAMPLES, math.ceil(RESOLUTION / alpha))


def calibrated_params(
    params: Mapping[str, Any],
    *,
    defaults: Mapping[str, Any],
    ert_days: float,
    interval_seconds: float,
) -> dict[str, Any]:
    """The detector parameters a run uses: ``alpha`` from the ERT, enough resamples for it.

    ``defaults`` are the detector's own parameters (:func:`detectors.registry.detector_parameters`):
    only the ones it has are set. An explicit ``alpha`` in the monitor's parameters is an
    override and is kept (the ERT then no longer describes the monitor).

    >>> calibrated_params({}, defaults={"alpha": 0.01, "n_permutations": 999},
    ...                   ert_days=30, interval_seconds=900)["n_permutations"]
    11520
    """
    out = dict(params)
    if "alpha" not in defaults:
        return out
    alpha = (
        float(out["alpha"])
        if "alpha" in out
        else alpha_per_run(ert_days=ert_days, interval_seconds=interval_seconds)
    )
    resampled = [name for name in RESAMPLING_PARAMS if name in defaults]
    if resampled and "alpha" not in params:
        alpha = max(alpha, RESOLUTION / (MAX_RESAMPLES + 1))
    out["alpha"] = alpha
    for name in RESAMPLING_PARAMS:
        if name in defaults:
            given = int(out.get(name, defaults[name]))
            out[name] = max(given, resamples_for(alpha))
    return out


def run_params(monitor: Monitor, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The detector parameters a run of ``monitor`` uses: its own, with alpha from its ERT.

    With the sequential chart on, the per-run test gets half the false-alert rate (twice
    the ERT) and the chart the other half (:mod:`app.monitors.decide`).
    """
    share = 0.5 if monitor.sequential else 1.0
    out = calibrated_params(
        monitor.detector_params or {},
        defaults=defaults,
        ert_days=float(monitor.expected_days_between_false_alerts) / share,
        interval_seconds=float(monitor.interval_seconds),
    )
    if "interval_seconds" in defaults:  # a detector that counts steps (an alert rule's ``for``)
        out["interval_seconds"] = int(monitor.interval_seconds)
    return out
