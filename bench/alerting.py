"""Alerting bench: what on-call lives through, replayed through the real runner and alert
lifecycle on a simulated clock. Prints JSON.

    python -m bench.alerting [--clean-days 15] [--seeds 0 1] [--step-modes FM-2 ...] [--ramp-modes ...]

Each scenario is the project's scenario generator (``pipelines.scenarios``) ingested into
a fresh SQLite database through the ingest path, the seven default monitors
(``POST /monitors/defaults``: 2 h current window, 4 h baseline from the same hours the day
before and frozen while an alert is open, every 15 minutes, alpha from a 30-day
false-alert budget) and :class:`app.monitors.runner.MonitorRunner` running every 15 simulated
minutes with an injected ``now``, the monitors of one time sharing a cycle's window cache
as the scheduler's do; alerts, their openings and resolutions are read back from the
database. Failures start after ``STEADY_H`` hours of clean traffic (the whole lag fits).

* ``clean``: false alert episodes per monitor per 30 days, over ``--clean-days`` per seed
  (all seven monitors run; every episode is false).
* ``step``: the mode is switched on at full strength at onset, kept on ``STEP_H`` hours,
  then off (the clean workload resumes; the mode's monitor runs). ``delay_h``: onset ->
  first alert; ``open_share``: share of evaluations from onset + the detection budget
  (2 h, FM-4 4 h: the targets' delays) to the end with the alert open; ``resolve_h``: end -> resolution (None: still
  open ``AFTER_H`` hours after the end).
* ``ramp``: a linear ramp from zero to full strength over ``RAMP_H`` hours, kept at full
  strength ``HOLD_H`` hours, then off; ``open_share`` is over the evaluations after the
  ramp until the end.

Traffic is modest so that it runs on a 2-core machine: ``TRACES_PER_HOUR`` production
traces (plus hourly eval-harness bursts and shadow replays), ``IMAGES_PER_HOUR`` images
on the ``vlm.image`` stream, ``DIM``-d embeddings. A failure scenario runs only its mode's
monitor; the specificity between modes is ``bench/detection.py``'s business.
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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app import migrate
from app.db import make_engine, write_session
from app.ingest.events import validate_events
from app.ingest.store import write_events
from app.keys import get_or_create_project
from app.models import Alert, DetectorRun
from app.monitors.defaults import WINDOW, create_defaults
from app.monitors.runner import MonitorRunner
from app.monitors.slots import DetectorSlots
from pipelines.scenarios import Injection, generate_workload

START = datetime(2025, 3, 3, tzinfo=UTC)
HOUR = timedelta(hours=1)
INTERVAL = timedelta(minutes=15)
TRACES_PER_HOUR, IMAGES_PER_HOUR, EVAL_PER_AGENT_HOUR, DIM = 80.0, 90.0, 12, 32
# Clean runs: the first evaluation after current 2 h + shortest lag 2 h + baseline 4 h; the
# defaults' 22 h lag shrinks to fit the young history (app.monitors.windows.history) until it is
# STEADY_H long, so clean days measure both phases.
WARMUP_H = 8
# Failures begin once the whole lag fits: they meet the baseline a monitor has from its
# second day on (yesterday's hours), not the young-history one.
STEADY_H = math.ceil(
    (WINDOW["current_window_seconds"] + WINDOW["baseline_lag_seconds"]
     + WINDOW["reference_window_seconds"]) / 3600
)  # fmt: skip
# Selection keys laid over the defaults' (``--lag-hours``: an experiment, not the defaults).
OVERRIDES: dict[str, Any] = {}
PRE_H, STEP_H, RAMP_H, HOLD_H, AFTER_H = 2, 12, 24, 6, 6
DETECTION_BUDGET_H = {"FM-4": 4.0}  # the step targets: 2 h, FM-4 4 h (labels lag)
TARGETS = {
    "clean_false_episodes_per_monitor_per_30d_max": 1.0,
    "step_moderate": {"delay_h_max": 2.0, "delay_h_max_FM-4": 4.0, "open_share_min": 0.95,
                      "resolve_h_max": 3.0},
    "ramp_24h_moderate": {"delay_h_max": 12.0, "open_share_after_ramp_min": 0.9},
}  # fmt: skip
STEP_MODES = ("FM-1", "FM-2", "FM-3", "FM-4", "FM-5", "FM-6", "FM-7")
RAMP_MODES = ("FM-1", "FM-2", "FM-6", "FM-7")


def set_traffic(traces_per_hour: float) -> None:
    """Production traces per hour for the replays; the images scale with them."""
    global TRACES_PER_HOUR, IMAGES_PER_HOUR
    IMAGES_PER_HOUR *= traces_per_hour / TRACES_PER_HOUR
    TRACES_PER_HOUR = traces_per_hour


def _workload(seed: int, hours: float, **kw: Any) -> list[dict[str, Any]]:
    return generate_workload(
        seed, START, timedelta(hours=hours), TRACES_PER_HOUR, embedding_dim=DIM,
        images_per_hour=IMAGES_PER_HOUR, eval_per_agent_hour=EVAL_PER_AGENT_HOUR, **kw,
    )  # fmt: skip


def failure_events(
    seed: int, mode: str, strength: str, *, onset: datetime, end: datetime, ramp: timedelta,
    hours: float,
) -> list[dict[str, Any]]:  # fmt: skip
    """The clean workload outside ``[onset, end)``, the injected one inside (same seed)."""
    inj = [Injection(mode, onset, strength, ramp=ramp)]
    stop = START + timedelta(hours=hours)
    return (
        _workload(seed, hours, emit_between=(START, onset))
        + _workload(seed, hours, injections=inj, emit_between=(onset, end))
        + _workload(seed, hours, emit_between=(end, stop))
    )


@dataclass
class Replay:
    engine: Engine
    monitors: dict[str, int]  # failure mode -> monitor id


def replay_db(events: list[dict[str, Any]], folder: Path, name: str) -> Replay:
    """A fresh database at head with ``events`` ingested and the seven default monitors."""
    url = f"sqlite:///{folder / name}.db"
    migrate.upgrade(url)
    engine = make_engine(url)
    with write_session(engine) as s:
        pid = get_or_create_project(s, name="bench").id
        created = create_defaults(s, project_id=pid)
        for m in created:
            m.selection = {**m.selection, **OVERRIDES}
        monitors = {m.failure_mode: m.id for m in created}
    valid, rejected = validate_events(events)
    if rejected:
        raise RuntimeError(f"{len(rejected)} generated events rejected: {rejected[:1]}")
    for i in range(0, len(valid), 5000):
        write_events(engine, project_id=pid, events=valid[i : i + 5000])
    return Replay(engine, monitors)


def evaluate(replay: Replay, modes: Sequence[str], start: datetime, stop: datetime) -> None:
    """Every ``INTERVAL`` the monitors of ``modes`` run as one scheduler cycle does, through a
    scheduler's :class:`~app.monitors.runner.MonitorRunner`: sharing one cycle's windows
    (each loaded once per cycle), and its step cache from cycle to cycle."""
    runner = MonitorRunner(replay.engine, slots=DetectorSlots(capacity=2))
    now = start
    while now <= stop:
        cycle = runner.cycle(now)
        for mode in modes:
            runner.run(replay.monitors[mode], now=now, scheduled_for=now, cycle=cycle)
        runner.end_cycle()
        now += INTERVAL


def _alerts(engine: Engine, monitor_id: int) -> list[Alert]:
    with Session(engine) as s:
        return list(s.scalars(select(Alert).where(Alert.monitor_id == monitor_id)))


def _run_times(engine: Engine, monitor_id: int) -> list[datetime]:
    with Session(engine) as s:
        q = select(DetectorRun.at).where(DetectorRun.monitor_id == monitor_id)
        return sorted(s.scalars(q))


def _open_at(alerts: list[Alert], t: datetime) -> bool:
    return any(
        a.first_fired_at <= t and (a.resolved_at is None or a.resolved_at > t) for a in alerts
    )


def failure_figures(
    replay: Replay, mode: str, *, onset: datetime, end: datetime, open_from: datetime
) -> dict[str, Any]:
    mid = replay.monitors[mode]
    alerts = _alerts(replay.engine, mid)
    runs = _run_times(replay.engine, mid)
    false = [a for a in alerts if a.first_fired_at < onset]
    true = sorted((a for a in alerts if a.first_fired_at >= onset), key=lambda a: a.first_fired_at)
    during = [t for t in runs if open_from <= t < end]
    holding = [a for a in alerts if _open_at([a], end - INTERVAL)]
    resolved = [a.resolved_at for a in holding if a.resolved_at is not None]
    resolve_h = None
    if holding and len(resolved) == len(holding):
        resolve_h = round((max(resolved) - end) / HOUR, 2)
    return {
        "delay_h": round((true[0].first_fired_at - onset) / HOUR, 2) if true else None,
        "open_share": round(sum(_open_at(alerts, t) for t in during) / len(during), 3)
        if during else None,
        "resolve_h": resolve_h if holding else (0.0 if true else None),
        "episodes": len(true),
        "false_before_onset": len(false),
        "evaluations": len(during),
    }  # fmt: skip


def run_clean(
    seed: int, days: float, folder: Path, modes: Sequence[str] = STEP_MODES
) -> dict[str, Any]:
    hours = WARMUP_H + days * 24
    replay = replay_db(_workload(seed, hours), folder, f"clean-{seed}")
    evaluate(replay, modes, START + WARMUP_H * HOUR, START + hours * HOUR)
    return {mode: len(_alerts(replay.engine, replay.monitors[mode])) for mode in modes}


def run_failure(seed: int, mode: str, strength: str, kind: str, folder: Path) -> dict[str, Any]:
    onset = START + (STEADY_H + PRE_H) * HOUR
    ramp = RAMP_H * HOUR if kind == "ramp" else timedelta(0)
    on_for = ramp + HOLD_H * HOUR if kind == "ramp" else STEP_H * HOUR
    end = onset + on_for
    hours = (end - START) / HOUR + AFTER_H
    events = failure_events(seed, mode, strength, onset=onset, end=end, ramp=ramp, hours=hours)
    replay = replay_db(events, folder, f"{kind}-{mode}-{strength}-{seed}")
    evaluate(replay, [mode], START + STEADY_H * HOUR, START + hours * HOUR)
    budget = DETECTION_BUDGET_H.get(mode, 2.0)
    open_from = onset + ramp if kind == "ramp" else onset + budget * HOUR
    return failure_figures(replay, mode, onset=onset, end=end, open_from=open_from)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--clean-days", type=float, default=15.0, help="per seed")
    ap.add_argument(
        "--clean-modes",
        nargs="+",
        default=list(STEP_MODES),
        help="monitors run on clean traffic (each is independent of the others)",
    )
    ap.add_argument("--step-modes", nargs="*", default=list(STEP_MODES))
    ap.add_argument("--ramp-modes", nargs="*", default=list(RAMP_MODES))
    ap.add_argument("--strengths", nargs="+", default=["moderate", "weak"])
    ap.add_argument("--failure-seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--lag-hours", type=float, default=None, help="override the baseline lag")
    ap.add_argument(
        "--traces-per-hour", type=float, default=None,
        help="production traffic (default 80); images scale with it",
    )  # fmt: skip
    args = ap.parse_args(argv)
    global STEADY_H
    if args.traces_per_hour is not None:
        set_traffic(args.traces_per_hour)
    if args.lag_hours is not None:
        OVERRIDES["baseline_lag_seconds"] = int(args.lag_hours * 3600)
        STEADY_H = math.ceil(2 + args.lag_hours + 4)
    t0 = time.perf_counter()
    out: dict[str, Any] = {
        "config": {
            "traces_per_hour": TRACES_PER_HOUR, "images_per_hour": IMAGES_PER_HOUR,
            "eval_per_agent_hour": EVAL_PER_AGENT_HOUR, "embedding_dim": DIM,
            "interval_minutes": INTERVAL / timedelta(minutes=1), "step_h": STEP_H,
            "ramp_h": RAMP_H, "hold_after_ramp_h": HOLD_H, "after_h": AFTER_H,
            "seeds": args.seeds, "clean_days_per_seed": args.clean_days,
            "selection_overrides": OVERRIDES,
        },
        "targets": TARGETS,
    }  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="telltale-alerting-") as tmp:
        folder = Path(tmp)
        if args.clean_days > 0:
            episodes: dict[str, int] = {}
            for seed in args.seeds:
                for mode, n in run_clean(seed, args.clean_days, folder, args.clean_modes).items():
                    episodes[mode] = episodes.get(mode, 0) + n
            days = args.clean_days * len(args.seeds)
            out["clean"] = {
                "simulated_days": days,
                "false_episodes": episodes,
                "false_episodes_per_30d": {m: round(n * 30 / days, 2) for m, n in episodes.items()},
            }
        for kind, modes in (("step", args.step_modes), ("ramp", args.ramp_modes)):
            for strength in args.strengths if kind == "step" else ["moderate"]:
                for mode in modes:
                    rows = [
                        run_failure(s, mode, strength, kind, folder) for s in args.failure_seeds
                    ]
                    out.setdefault(kind, {}).setdefault(strength, {})[mode] = rows
                    print(f"{kind} {strength} {mode}: {rows}", file=sys.stderr, flush=True)
    out["elapsed_s"] = round(time.perf_counter() - t0, 1)
    json.dump(out, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
