"""Chart replay: the sequential chart's designs compared on the same per-run p-values. Prints JSON.

    python -m bench.chart_replay [--modes FM-1 FM-2 FM-6 FM-7] [--seeds 0 1 2]

Each ramp of ``bench/alerting.py`` (24 h linear ramp to moderate, 80 traces/h; the same
events, failure seed for failure seed) is replayed
through the real runner with the alert lifecycle held shut (no run fires, so the baseline
keeps rolling and every run is tested against yesterday's hours), and each run's p-value
is kept. The chart designs then read the same p-values, one per non-overlapping current
window as :func:`app.monitors.sequential.update` takes them, with the defaults' ARL0 and
variance inflation:

* ``plain``: the EWMA chart without a barrier (two-sided limit for ARL0 / 2), the design
  before the barrier;
* ``reflected``: the chart as it runs (:mod:`app.monitors.sequential`).

For each ramp: hours from onset to each design's first signal (the chart alone; a monitor
also fires on a single run below its alpha), and the p-values of the observations.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import DetectorRun
from app.monitors import sequential
from app.monitors import state as monitor_state
from app.monitors.defaults import WINDOW
from bench import alerting
from detectors.drift import ewma_limit_for_arl0


def ramp_pvalues(mode: str, seed: int, folder: Path) -> tuple[datetime, list[tuple[Any, ...]]]:
    """Onset, and ``(at, window_start, window_end, p)`` of every ok run over the ramp."""
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
    with Session(replay.engine) as s:
        q = (
            select(DetectorRun.at, DetectorRun.window_start, DetectorRun.window_end,
                   DetectorRun.p_value)
            .where(DetectorRun.monitor_id == replay.monitors[mode], DetectorRun.status == "ok")
            .order_by(DetectorRun.at)
        )  # fmt: skip
        return onset, [tuple(r) for r in s.execute(q) if r.p_value is not None]


def observations(runs: list[tuple[Any, ...]]) -> list[tuple[datetime, float]]:
    """One ``(at, p)`` per non-overlapping current window, as the chart takes them."""
    out: list[tuple[datetime, float]] = []
    last_end = None
    for at, start, end, p in runs:
        if last_end is None or start >= last_end:
            out.append((at, float(p)))
            last_end = end
    return out


def first_signal(
    obs: list[tuple[datetime, float]], step: Callable[[float, float], float], L: float,
    inflation: float, onset: datetime,
) -> float | None:  # fmt: skip
    lam, z = sequential.LAMBDA, 0.0
    for t, (at, p) in enumerate(obs, start=1):
        z = step(z, sequential.score(p))
        width = L * math.sqrt(inflation * lam / (2 - lam) * (1 - (1 - lam) ** (2 * t)))
        if z > width:
            return round((at - onset).total_seconds() / 3600, 2)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", nargs="+", default=list(alerting.RAMP_MODES))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = ap.parse_args(argv)
    # Hold the lifecycle shut: no run fires, so no alert freezes the baseline.
    monitor_state._verdict = lambda monitor, policy, state, w, result: monitor_state.Verdict(
        False, False, state.chart, {}
    )
    c, r = WINDOW["current_window_seconds"], WINDOW["reference_window_seconds"]
    spacing = max(900, c)
    arl0 = sequential.arl0_observations(ert_days=30.0, share=0.5, observation_s=spacing)
    inflation = sequential.variance_inflation(
        sequential.shared_reference_correlation(
            current_seconds=c, reference_seconds=r, spacing_seconds=spacing
        )
    )
    lam = sequential.LAMBDA
    designs: dict[str, tuple[Callable[[float, float], float], float]] = {
        "plain": (lambda z, x: lam * x + (1 - lam) * z, ewma_limit_for_arl0(arl0 / 2, lam)),
        "reflected": (
            lambda z, x: max(0.0, lam * x + (1 - lam) * z), sequential.limit_width(arl0, lam)
        ),
    }  # fmt: skip
    t0 = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory(prefix="telltale-chart-") as tmp:
        for mode in args.modes:
            for seed in args.seeds:
                onset, runs = ramp_pvalues(mode, seed, Path(tmp))
                obs = observations(runs)
                row = {
                    "mode": mode, "seed": seed,
                    "signal_h": {name: first_signal(obs, step, L, inflation, onset)
                                 for name, (step, L) in designs.items()},
                    "observations": [[round((at - onset).total_seconds() / 3600, 2),
                                      float(f"{p:.3g}")] for at, p in obs],
                }  # fmt: skip
                rows.append(row)
                print(f"{mode} seed {seed}: {row['signal_h']}", file=sys.stderr, flush=True)
    out = {
        "config": {"arl0_observations": arl0, "variance_inflation": inflation, "lam": lam,
                   "L": {name: L for name, (_, L) in designs.items()},
                   "traces_per_hour": alerting.TRACES_PER_HOUR},
        "ramps": rows,
        "elapsed_s": round(time.perf_counter() - t0, 1),
    }  # fmt: skip
    json.dump(out, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
