"""Chart replay: the sequential chart's designs compared on the same per-run p-values. Prints JSON.

    python -m bench.chart_replay [--modes FM-1 FM-2 FM-6 FM-7] [--seeds 0 1 2]
                                 [--traces-per-hour 80] [--clean-days 0]

Each ramp of ``bench/alerting.py`` (24 h linear ramp to moderate, 80 traces/h; the same
events, failure seed for failure seed) is replayed
through the real runner with the alert lifecycle held shut (no run fires, so the baseline
keeps rolling and every run is tested against yesterday's hours), and each run's p-value
and its sub-tests' raw p-values are kept. The chart designs then read the same runs, with
limits for the defaults' false-alert budget (half of a 30-day ERT, as the chart has):

* ``plain``: the EWMA chart without a barrier (two-sided limit for ARL0 / 2), the design
  before the barrier;
* ``reflected``: the chart as it runs (:mod:`app.monitors.decision.sequential`): one observation
  per non-overlapping 2 h window;
* ``per_sub_test``: one reflected chart per sub-test on its raw p-value (no Holm factor,
  no effect gate), each for ARL0 x the number of sub-tests (the union bound);
* ``hourly`` / ``half_hourly``: the reflected chart observing every hour (λ 0.2) or every
  30 minutes (λ 0.1) on half- or three-quarter-overlapping windows, the limits widened for
  the overlap of the current windows as well as the shared reference
  (:func:`overlap_inflation`).

For each ramp: hours from onset to each design's first signal (the chart alone; a monitor
also fires on a single run below its alpha). With ``--clean-days``, the same designs on
clean traffic of each seed (every monitor's runs, lifecycle shut): signals there are false
(the chart restarts after each).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import DetectorRun
from app.monitors import decide
from app.monitors.decision import sequential
from app.monitors.defaults import WINDOW
from bench import alerting
from detectors.drift import ewma_limit_for_arl0, reflected_ewma_limit_for_arl0

HOUR_S = 3600.0


@dataclass(frozen=True)
class Run:
    at: datetime
    window_start: datetime
    window_end: datetime
    p: float
    sub_p: dict[str, float]  # each sub-test's raw p-value


def _sub_p(evidence: dict[str, Any]) -> dict[str, float]:
    tests = evidence.get("sub_tests") or evidence.get("subtests") or {}
    return {n: float(t["p_value"]) for n, t in tests.items() if t.get("p_value") is not None}


def _runs(replay: alerting.Replay, mode: str) -> list[Run]:
    with Session(replay.engine) as s:
        q = (
            select(DetectorRun)
            .where(DetectorRun.monitor_id == replay.monitors[mode], DetectorRun.status == "ok")
            .order_by(DetectorRun.at)
        )
        return [
            Run(r.at, r.window_start, r.window_end, float(r.p_value), _sub_p(r.evidence or {}))
            for r in s.scalars(q)
            if r.p_value is not None
        ]


def ramp_runs(mode: str, seed: int, folder: Path) -> tuple[datetime, list[Run]]:
    """Onset, and every ok run over the ramp."""
    onset = alerting.START + (alerting.STEADY_H + alerting.PRE_H) * alerting.HOUR
    ramp = alerting.RAMP_H * alerting.HOUR
    end = onset + ramp + alerting.HOLD_H * alerting.HOUR
    # The alerting bench's duration: the generator's draws depend on it, so the same events.
    hours = (end - alerting.START) / alerting.HOUR + alerting.AFTER_H
    events = alerting.failure_events(
        seed, mode, "moderate", onset=onset, end=end, ramp=ramp, hours=hours
    )
    replay = alerting.replay_db(events, folder, f"chart-{mode}-{seed}")
    alerting.evaluate(replay, [mode], alerting.START + alerting.STEADY_H * alerting.HOUR, end)
    return onset, _runs(replay, mode)


def clean_runs(modes: Sequence[str], seed: int, days: float, folder: Path) -> dict[str, list[Run]]:
    hours = alerting.WARMUP_H + days * 24
    replay = alerting.replay_db(alerting._workload(seed, hours), folder, f"chart-clean-{seed}")
    start = alerting.START + alerting.STEADY_H * alerting.HOUR
    alerting.evaluate(replay, modes, start, alerting.START + hours * alerting.HOUR)
    return {mode: _runs(replay, mode) for mode in modes}


def observations(runs: list[Run], spacing_s: float) -> list[Run]:
    """The runs a chart observing every ``spacing_s`` takes (with ``spacing_s`` = the current
    window: one per non-overlapping window, as :func:`app.monitors.decision.sequential.update`)."""
    out: list[Run] = []
    for run in runs:
        if not out or (run.window_start - out[-1].window_start).total_seconds() >= spacing_s:
            out.append(run)
    return out


def overlap_inflation(
    *, current_s: float, reference_s: float, spacing_s: float, lam: float
) -> float:
    """The EWMA's variance inflation (Zhang 1998) when observations ``spacing_s`` apart
    share part of their current window as well as of their rolling reference: the
    reference's share (:func:`app.monitors.decision.sequential.shared_reference_correlation`) plus
    the current window's, ``o_c r / (c (r + c))`` with overlap ``o_c = max(0, c - k s)``.

    >>> round(overlap_inflation(current_s=7200, reference_s=14400, spacing_s=7200, lam=0.2), 4)
    1.2667
    >>> round(overlap_inflation(current_s=7200, reference_s=14400, spacing_s=3600, lam=0.2), 3)
    2.232
    """
    c, r, s = current_s, reference_s, spacing_s
    rho = list(
        sequential.shared_reference_correlation(
            current_seconds=c, reference_seconds=r, spacing_seconds=s
        )
    )
    k = 1
    while c - k * s > 0:
        if k > len(rho):
            rho.append(0.0)
        rho[k - 1] += (c - k * s) * r / (c * (r + c))
        k += 1
    return sequential.variance_inflation(tuple(rho), lam)


@dataclass(frozen=True)
class Design:
    spacing_s: float
    lam: float
    reflected: bool
    per_sub_test: bool

    def limit(self, arl0: float) -> float:
        if not self.reflected:
            return ewma_limit_for_arl0(arl0 / 2, self.lam)
        return reflected_ewma_limit_for_arl0(arl0, self.lam, floor=sequential.X_MIN)


DESIGNS = {
    "plain": Design(7200, sequential.LAMBDA, False, False),
    "reflected": Design(7200, sequential.LAMBDA, True, False),
    "per_sub_test": Design(7200, sequential.LAMBDA, True, True),
    "hourly": Design(3600, 0.2, True, False),
    "half_hourly": Design(1800, 0.1, True, False),
}


def signals(runs: list[Run], design: Design, n_sub_tests: int) -> list[datetime]:
    """When the design's chart signals (restarting after each signal)."""
    c, r = WINDOW["current_window_seconds"], WINDOW["reference_window_seconds"]
    arl0 = sequential.arl0_observations(ert_days=30.0, share=0.5, observation_s=design.spacing_s)
    k = n_sub_tests if design.per_sub_test else 1
    L = design.limit(arl0 * k)
    inflation = overlap_inflation(
        current_s=c, reference_s=r, spacing_s=design.spacing_s, lam=design.lam
    )
    lam = design.lam
    out: list[datetime] = []
    z: dict[str, float] = {}
    t: dict[str, int] = {}
    for run in observations(runs, design.spacing_s):
        ps = run.sub_p if design.per_sub_test and run.sub_p else {"run": run.p}
        for name, p in ps.items():
            x = lam * sequential.score(p) + (1 - lam) * z.get(name, 0.0)
            z[name] = max(0.0, x) if design.reflected else x
            t[name] = t.get(name, 0) + 1
            width = L * math.sqrt(inflation * lam / (2 - lam) * (1 - (1 - lam) ** (2 * t[name])))
            if z[name] > width:
                out.append(run.at)
                z, t = {}, {}
                break
    return out


def _sub_test_count(runs: list[Run]) -> int:
    return max(1, len({n for run in runs for n in run.sub_p}))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", nargs="+", default=list(alerting.RAMP_MODES))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--traces-per-hour", type=float, default=None)
    ap.add_argument("--clean-days", type=float, default=0.0, help="per seed; 0: ramps only")
    args = ap.parse_args(argv)
    if args.traces_per_hour is not None:
        alerting.set_traffic(args.traces_per_hour)
    # Hold the lifecycle shut: no run fires, so no alert freezes the baseline.
    decide._verdict = lambda monitor, policy, state, w, result: decide.Verdict(
        False, False, state.chart, {}
    )
    t0 = time.perf_counter()
    rows = []
    clean: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="telltale-chart-") as tmp:
        for mode in args.modes:
            for seed in args.seeds:
                onset, runs = ramp_runs(mode, seed, Path(tmp))
                k = _sub_test_count(runs)
                first = {}
                for name, design in DESIGNS.items():
                    after = [at for at in signals(runs, design, k) if at >= onset]
                    first[name] = (
                        round((after[0] - onset).total_seconds() / HOUR_S, 2) if after else None
                    )
                obs = observations(runs, 7200)
                row = {
                    "mode": mode, "seed": seed, "sub_tests": k, "signal_h": first,
                    "observations": [[round((o.at - onset).total_seconds() / HOUR_S, 2),
                                      float(f"{o.p:.3g}")] for o in obs],
                }  # fmt: skip
                rows.append(row)
                print(f"{mode} seed {seed}: {first}", file=sys.stderr, flush=True)
        if args.clean_days > 0:
            for seed in args.seeds:
                for mode, runs in clean_runs(args.modes, seed, args.clean_days, Path(tmp)).items():
                    k = _sub_test_count(runs)
                    per = clean.setdefault(mode, {})
                    for name, design in DESIGNS.items():
                        per[name] = per.get(name, 0) + len(signals(runs, design, k))
                print(f"clean seed {seed}: {clean}", file=sys.stderr, flush=True)
    out = {
        "config": {"designs": {n: vars(d) for n, d in DESIGNS.items()},
                   "traces_per_hour": alerting.TRACES_PER_HOUR, "ert_days": 30.0,
                   "chart_share": 0.5, "clean_days_per_seed": args.clean_days},
        "ramps": rows,
        "clean_false_signals": clean,
        "elapsed_s": round(time.perf_counter() - t0, 1),
    }  # fmt: skip
    json.dump(out, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
