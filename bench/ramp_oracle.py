"""Ramp oracle: how much evidence of FM-7's proxy rise a 24 h ramp holds by a given hour,
for a test that knows the onset and the ramp's shape. Prints JSON.

    python -m bench.ramp_oracle [--seeds 0 1 2] [--traces-per-hour 80]

The alerting bench's moderate FM-7 ramp (``bench/alerting.py``: the same events, failure
seed for failure seed) raises the proxy objectives linearly from the onset. For each proxy
score and each hour ``T`` after the onset, the oracle is the most powerful test of that
mean shift against the 24 h before the onset when the shape is known: the ramp-weighted
sum ``Σ f_i (x_i − μ_ref)`` over the production traces since the onset (``f_i`` the ramp's
fraction at the trace's start), standardised with the reference's variance, the
reference mean's own error included. A monitor does not know the onset or the shape, so it
can only do worse; the figure to compare is ``z_needed``, the normal quantile of the run
level a default FM-7 run tests each proxy at (half a 30-day ERT per 15-minute run, Holm
over the proxies). FM-7 also needs a true objective to fall, which the same ramp makes far
more evident (``true_z`` the oracle's z for each true score, negative: a fall).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
from scipy import stats

from app.monitors.decision import calibration
from bench import alerting

HOURS = (6, 8, 10, 12, 14, 16)
REFERENCE_H = 24.0


def scores_since_onset(
    seed: int,
) -> tuple[dict[str, str], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Each score's kind, and per score name (hours from onset, value) of production traces."""
    onset = alerting.START + (alerting.STEADY_H + alerting.PRE_H) * alerting.HOUR
    ramp = alerting.RAMP_H * alerting.HOUR
    end = onset + ramp + alerting.HOLD_H * alerting.HOUR
    hours = (end - alerting.START) / alerting.HOUR + alerting.AFTER_H
    events = alerting.failure_events(
        seed, "FM-7", "moderate", onset=onset, end=end, ramp=ramp, hours=hours
    )
    started = {
        e["body"]["trace_id"]: datetime.fromisoformat(
            e["body"]["started_at"].replace("Z", "+00:00")
        )
        for e in events
        if e["type"] == "trace" and e["body"]["source"] == "production"
    }
    kinds: dict[str, str] = {}
    points: dict[str, list[tuple[float, float]]] = {}
    for e in events:
        body = e["body"]
        if e["type"] != "score" or body["trace_id"] not in started:
            continue
        kinds[body["name"]] = body.get("kind") or ""
        h = (started[body["trace_id"]] - onset) / alerting.HOUR
        points.setdefault(body["name"], []).append((h, float(body["value"])))
    return kinds, {n: (np.array([p[0] for p in v]), np.array([p[1] for p in v]))
                   for n, v in points.items()}  # fmt: skip


def oracle_z(h: np.ndarray, x: np.ndarray, until_h: float) -> float:
    """The ramp-weighted shift's z by ``until_h`` hours after the onset."""
    ref = x[(h >= -REFERENCE_H) & (h < 0)]
    now = (h >= 0) & (h < until_h)
    f = h[now] / alerting.RAMP_H
    var = ref.var(ddof=1) * (np.sum(f**2) + np.sum(f) ** 2 / ref.size)
    return float(np.sum(f * (x[now] - ref.mean())) / math.sqrt(var))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--traces-per-hour", type=float, default=None)
    args = ap.parse_args(argv)
    if args.traces_per_hour is not None:
        alerting.set_traffic(args.traces_per_hour)
    alpha_run = calibration.alpha_per_run(ert_days=60.0, interval_seconds=900)
    rows: list[dict[str, Any]] = []
    for seed in args.seeds:
        kinds, series = scores_since_onset(seed)
        proxies = sorted(n for n, k in kinds.items() if k == "proxy")
        trues = sorted(n for n, k in kinds.items() if k == "true" and n in series)
        row = {
            "seed": seed,
            "proxy_z": {n: {T: round(oracle_z(*series[n], T), 2) for T in HOURS} for n in proxies},
            "true_z": {n: {T: round(oracle_z(*series[n], T), 2) for T in HOURS} for n in trues},
            "z_needed": round(float(stats.norm.isf(alpha_run / len(proxies))), 2),
        }  # fmt: skip
        rows.append(row)
        print(f"seed {seed}: {row['proxy_z']}", file=sys.stderr, flush=True)
    out = {
        "config": {"traces_per_hour": alerting.TRACES_PER_HOUR, "ramp_h": alerting.RAMP_H,
                   "reference_h": REFERENCE_H, "alpha_run": alpha_run},
        "ramps": rows,
    }  # fmt: skip
    json.dump(out, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
