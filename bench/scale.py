"""Monitor cost at volume: one scheduler cycle of the seven defaults at 1k/10k/100k traces/h.

    python -m bench.scale [--rates 1000,10000,100000] [--db postgresql] [--hours 6]
                          [--inject FM-2] [--strength moderate]
    python -m bench.scale --table [--rates 1000,10000]   # the detection table by rate
    python -m bench.scale --inject '' --sweep 9 --reuse ttclean  # clean runs at volume
    python -m bench.scale --run-now --rates 1000,10000  # run now vs the scheduler's cycle

Per rate: a fresh database, ``--hours`` of the scenario generator's traffic at that rate
(with ``--inject`` switched on for the last 2 h, so the current window holds the failure),
written through the ingest path (``validate_events`` + ``write_events``: what
``POST /api/v1/ingest`` runs, without HTTP), generated an hour at a time to bound memory;
then cycles of the seven default monitors through the real scheduler tick
(``SchedulerService.tick``: claims, the shared window cache, the detectors, persisted runs
and alerts), each in a fresh process as a ``telltale scheduler`` would be, so its RSS is the
process's own. Three cycles, by how many step profiles they find stored
(app/monitors/windows/profiles.py) and whether the scheduler ran before:
``cold_cycle`` none stored and a fresh scheduler (the first cycle after a bulk load or an
upgrade profiles every trace of its windows and reads every sampled trace's spans);
``without_derive_job`` all but the last ``--interval`` of traffic (a scheduler running
every interval with the derive job off); the top level all but the last 30 s (the derive
job, on by default, stores them as traces settle). The last two are a running scheduler's
*next* cycle: the same process ticks ``--interval`` earlier first (``first_cycle_s``), so
its step cache (app/monitors/windows/step_cache.py) holds what that cycle read
(``steps_reused``).
Prints one JSON object: per rate the steady cycle seconds, per-monitor seconds (the
first monitor of the cycle pays the window load), the rows in the windows and the rows
loaded (the sample), the cycle process's peak RSS, and each monitor's verdict; then whether
every rate gave the lowest rate's verdicts. ``--sweep K`` runs a scheduler's last K cycles
instead (one process, every ``--interval``, alerts and baselines live) and counts per
monitor the fired runs, the alerts opened and the p-values: on clean traffic
(``--inject ''``) each fired run is a false one at that volume. ``--run-now`` times the
seven defaults run now one after another (:func:`run_now_rounds`) beside the scheduler's
next cycle in the same state, and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import fresh_db  # noqa: E402

# Traffic ends at today's midnight (UTC): on PostgreSQL its rows land in the daily
# partitions the migration made (the last 7 days), as live traffic does, not in DEFAULT.
END = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def start_for(hours: float) -> datetime:
    return END - timedelta(hours=hours)


def load(db_url: str, rate: float, hours: float, inject: str | None, strength: str) -> dict:
    from app import migrate
    from app.db import make_engine, write_session
    from app.ingest.events import validate_events
    from app.ingest.store import write_events
    from app.keys import get_or_create_project
    from app.monitors.defaults import create_defaults
    from pipelines.scenarios import Injection, generate_workload

    migrate.upgrade(db_url)
    engine = make_engine(db_url)
    with write_session(engine) as s:
        pid = get_or_create_project(s, name="default").id
    t0 = start_for(hours)
    end = END
    injections = [Injection(inject, end - timedelta(hours=2), strength)] if inject else []
    t = time.perf_counter()
    events = 0
    for h in range(int(hours)):
        lo, hi = t0 + timedelta(hours=h), t0 + timedelta(hours=h + 1)
        chunk = generate_workload(
            11, t0, end - t0, traces_per_hour=rate, injections=injections,
            embedding_dim=64, emit_between=(lo, hi),
        )  # fmt: skip
        for i in range(0, len(chunk), 2000):
            valid, rejected = validate_events(chunk[i : i + 2000])
            if rejected:
                raise SystemExit(f"the generator's events were rejected: {rejected[:2]}")
            write_events(engine, project_id=pid, events=valid)
        events += len(chunk)
        del chunk
    with write_session(engine) as s:
        create_defaults(s, project_id=pid)
    if engine.dialect.name == "postgresql":
        # Planner statistics, as autovacuum would gather them after a bulk load. This
        # machine's server runs with autovacuum=off: without them the planner reads the
        # span lookups as a scan of the whole project (73 s of a 96 s FM-1 run at 100k/h).
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("ANALYZE")
    engine.dispose()
    return {"events": events, "load_s": round(time.perf_counter() - t, 1), "end": end.isoformat()}


def _peak_rss_mb() -> int:
    """This process's peak RSS (VmHWM: ``ru_maxrss`` would carry the forking parent's)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return -1


def cycle(db_url: str, end: str, warm_up_s: float = 0.0) -> dict:
    """One scheduler tick as of ``end`` (run in its own process). With ``warm_up_s``, the
    same scheduler ticks first at ``end - warm_up_s`` (its runs then cleared), so the
    measured tick is a running scheduler's next cycle: its step cache
    (app/monitors/windows/step_cache.py) holds what the cycle before read."""
    from sqlalchemy import select, update

    from app.db import make_engine
    from app.models import DetectorRun, Monitor
    from app.scheduler.service import SchedulerService
    from app.settings import Settings

    now = datetime.fromisoformat(end)
    engine = make_engine(db_url)
    clock = [now - timedelta(seconds=warm_up_s)]
    service = SchedulerService(Settings(database_url=db_url), engine, None, clock=lambda: clock[0])
    first_s = None
    if warm_up_s:
        with engine.begin() as conn:
            conn.execute(update(Monitor).values(next_run_at=None))
        t = time.perf_counter()
        service.tick()
        first_s = round(time.perf_counter() - t, 2)
        _clear_runs(db_url)
        clock[0] = now
    with engine.begin() as conn:  # every monitor due at the simulated ``now``
        conn.execute(update(Monitor).values(next_run_at=None))
    hits = service.runner.step_cache.hits
    t = time.perf_counter()
    service.tick()
    seconds = time.perf_counter() - t
    monitors: dict[str, Any] = {}
    with engine.connect() as conn:
        for run in conn.execute(select(DetectorRun).order_by(DetectorRun.id)).mappings():
            sample = (run["evidence"] or {}).get("window_sample") or {}
            monitors[run["failure_mode"]] = {
                "seconds": round(run["duration_ms"] / 1000.0, 2),
                "status": run["status"],
                "fired": run["fired"],
                "p_value": run["p_value"],
                "n_reference": run["n_reference"],
                "n_current": run["n_current"],
                "rows_in_windows": sum(w.get("traces_in_window", 0) for w in sample.values()),
                "rows_loaded": sum(w.get("traces_loaded", 0) for w in sample.values()),
                "production_rate": (sample.get("current") or {}).get("production_rate"),
            }
    return {
        "cycle_s": round(seconds, 2),
        "first_cycle_s": first_s,  # the warm-up tick: a scheduler process's first cycle
        "steps_reused": service.runner.step_cache.hits - hits,
        "rss_peak_mb": _peak_rss_mb(),
        "monitors": monitors,
    }


def sweep(db_url: str, end: str, cycles: int, interval_s: float) -> dict:
    """A running scheduler's last ``cycles`` ticks, ``interval_s`` apart, up to ``end``, in
    one process with its real lifecycle (alerts open and resolve, baselines freeze, the
    sequential chart observes). On clean traffic every fired run is a false one: per
    monitor, the runs, the fired runs, the alerts opened and the p-values against the run's
    level (``alpha_run``)."""
    from sqlalchemy import select, update
    from sqlalchemy.orm import Session

    from app.db import make_engine
    from app.models import Alert, DetectorRun, Monitor
    from app.monitors.decision.calibration import run_params
    from app.scheduler.service import SchedulerService
    from app.settings import Settings
    from detectors.registry import detector_parameters

    last = datetime.fromisoformat(end)
    engine = make_engine(db_url)
    clock = [last]
    service = SchedulerService(Settings(database_url=db_url), engine, None, clock=lambda: clock[0])
    seconds = []
    for k in range(cycles):
        clock[0] = last - timedelta(seconds=interval_s * (cycles - 1 - k))
        with engine.begin() as conn:
            conn.execute(update(Monitor).values(next_run_at=None))
        t = time.perf_counter()
        service.tick()
        seconds.append(round(time.perf_counter() - t, 2))
    out: dict[str, Any] = {}
    with Session(engine) as session:
        monitors = {m.id: m for m in session.scalars(select(Monitor))}
        opened = list(session.scalars(select(Alert.monitor_id)))
        for run in session.scalars(select(DetectorRun).order_by(DetectorRun.id)):
            if run.failure_mode not in out:
                m = monitors[run.monitor_id]
                out[run.failure_mode] = {
                    "runs": 0, "fired": 0, "not_ok": 0, "p_values": [],
                    "alerts_opened": opened.count(m.id),
                    # The level the run tested at (half the ERT budget with the chart on).
                    "alpha_run": run_params(m, detector_parameters(m.failure_mode)).get("alpha"),
                }  # fmt: skip
            row = out[run.failure_mode]
            row["runs"] += 1
            row["fired"] += int(run.fired)
            if run.status != "ok" or run.p_value is None:
                row["not_ok"] += 1
            else:
                row["p_values"].append(run.p_value)
    for row in out.values():
        ps = sorted(row.pop("p_values"))
        row["min_p"] = ps[0] if ps else None
        row["median_p"] = ps[len(ps) // 2] if ps else None
        row["p_below_0.05"] = sum(p <= 0.05 for p in ps)
    seconds.sort()
    return {"cycles": cycles, "cycle_s_median": seconds[len(seconds) // 2],
            "rss_peak_mb": _peak_rss_mb(), "monitors": out}  # fmt: skip


def run_now_rounds(db_url: str, end: str, warm_up_s: float) -> dict:
    """The seven defaults run now one after another through the run-now path (the runner's
    ``run_now``, what ``POST /api/v1/monitors/{id}/run`` calls) in a fresh process, as
    :func:`cycle` ticks: a first round as of ``end - warm_up_s`` (``first_s``: a process's
    first), then the measured one as of ``end`` (``steady_s``); then ``alone_s``: the same
    seven as cycles of their own each (how run now loaded before it shared cycles)."""
    from sqlalchemy import select

    from app.db import make_engine
    from app.models import Monitor
    from app.monitors.runner import run_monitor
    from app.scheduler.service import SchedulerService
    from app.settings import Settings

    now = datetime.fromisoformat(end)
    engine = make_engine(db_url)
    runner = SchedulerService(Settings(database_url=db_url), engine, None).runner
    with engine.connect() as conn:
        ids = list(conn.scalars(select(Monitor.id).order_by(Monitor.id)))

    def timed(run: Any) -> float:
        t = time.perf_counter()
        for mid in ids:
            run(mid)
        _clear_runs(db_url)
        return round(time.perf_counter() - t, 2)

    first = timed(lambda mid: runner.run_now(mid, now=now - timedelta(seconds=warm_up_s)))
    steady = timed(lambda mid: runner.run_now(mid, now=now))
    alone = timed(lambda mid: run_monitor(engine, monitor_id=mid, now=now))
    return {"first_s": first, "steady_s": steady, "alone_s": alone, "rss_peak_mb": _peak_rss_mb()}


def run_now_vs_cycle(url: str, end: str, interval_s: float) -> dict:
    """Run now beside the scheduler, each in a fresh process from the same state: a cold
    cycle first (it stores the step profiles), then the scheduler's next cycle and the
    run-now rounds, each with the last 30 s unprofiled (the derive job's default)."""
    cold = _cycle_process(url, end)
    measured: dict[str, Any] = {}
    for name, args in (("scheduler", ("--cycle", url, end, str(interval_s))),
                       ("run_now", ("--run-now-round", url, end, str(interval_s)))):  # fmt: skip
        forget_recent_profiles(url, seconds=30.0)
        _clear_runs(url)
        measured[name] = _fresh_process(*args)
    cycle_s, first_s = measured["scheduler"]["cycle_s"], measured["scheduler"]["first_cycle_s"]
    rounds = measured["run_now"]
    return {
        "cold_cycle_s": cold["cycle_s"], "cycle_s": cycle_s, "first_cycle_s": first_s,
        "run_now": rounds,
        "run_now_over_cycle": round(rounds["steady_s"] / cycle_s, 2),
        "run_now_first_over_first_cycle": round(rounds["first_s"] / first_s, 2),
    }  # fmt: skip


@contextmanager
def reused_db(name: str, rate: float) -> Iterator[str]:
    """A kept PostgreSQL database per rate (created when missing), for repeated cycles."""
    import psycopg

    from bench.common import PG_ADMIN

    db = f"{name}_{int(rate)}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db,)).fetchone():
            conn.execute(f"CREATE DATABASE {db}")
    yield f"postgresql+psycopg://{PG_ADMIN.rsplit('/', 1)[0].split('://', 1)[1]}/{db}"


def _fresh_process(*args: str) -> dict:
    """``python -m bench.scale ARGS`` in a fresh process, as a ``telltale scheduler`` runs:
    its last line of JSON."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.scale", *args],
        capture_output=True, text=True, check=True,
        cwd=Path(__file__).resolve().parent.parent, env=dict(os.environ),
    )  # fmt: skip
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def _cycle_process(url: str, end: str, warm_up_s: float = 0.0) -> dict:
    """One cycle in a fresh process (after a first one ``warm_up_s`` earlier, when given)."""
    return _fresh_process("--cycle", url, end, str(warm_up_s))


def _sweep_process(url: str, end: str, cycles: int, interval_s: float) -> dict:
    """:func:`sweep` in a fresh process."""
    return _fresh_process("--interval", str(interval_s), "--sweep-cycle", url, end, str(cycles))


def _summary(cycle: dict) -> dict:
    return {
        "cycle_s": cycle["cycle_s"],
        "first_cycle_s": cycle["first_cycle_s"],
        "steps_reused": cycle["steps_reused"],
        "rss_peak_mb": cycle["rss_peak_mb"],
        "seconds_by_monitor": {m: v["seconds"] for m, v in cycle["monitors"].items()},
    }


def forget_recent_profiles(url: str, *, seconds: float) -> int:
    """Clear the step profiles of the traces that started in the last ``seconds`` before
    the traffic's end: what a scheduler running every ``seconds`` has not profiled yet."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            return int(
                conn.execute(
                    text("UPDATE traces SET step_profile = NULL WHERE started_at >= :since"),
                    {"since": END - timedelta(seconds=seconds)},
                ).rowcount
            )
    finally:
        engine.dispose()


def _clear_runs(url: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as conn:  # a clean slate: no runs, alerts or frozen baselines before
        for table in (
            "notifications", "alert_events", "findings", "alerts", "detector_runs",
            "monitor_baselines",
        ):  # fmt: skip
            conn.execute(text(f"DELETE FROM {table}"))
    engine.dispose()


def _has_data(url: str) -> bool:
    from sqlalchemy import create_engine, inspect, text

    engine = create_engine(url)
    try:
        if "monitors" not in inspect(engine).get_table_names():
            return False
        with engine.connect() as conn:
            return bool(conn.execute(text("SELECT count(*) FROM monitors")).scalar())
    finally:
        engine.dispose()


def reused_load(url: str, hours: float) -> dict:
    from sqlalchemy import create_engine, text

    from app import migrate

    migrate.upgrade(url)  # a database kept from an older tree gets today's schema
    _clear_runs(url)
    engine = create_engine(url)
    with engine.begin() as conn:  # as loaded: no step profile stored yet
        conn.execute(text("UPDATE traces SET step_profile = NULL"))
    engine.dispose()
    return {"events": None, "load_s": None, "end": END.isoformat()}


MODES = ("FM-1", "FM-2", "FM-3", "FM-4", "FM-5", "FM-6", "FM-7")


def detection_table(args: argparse.Namespace) -> dict:
    """Each failure mode injected (``--strength``, the last 2 h) at every rate: which of the
    seven monitors fired in one cycle, and whether every rate gave the lowest rate's
    verdicts (the sample at volume must not change what is found)."""
    rates = [float(r) for r in args.rates.split(",")]
    table: dict[str, dict[str, Any]] = {}
    for mode in args.modes.split(","):
        table[mode] = {}
        for rate in rates:
            with fresh_db(args.db) as url:
                loaded = load(url, rate, args.hours, mode, args.strength)
                result = _cycle_process(url, loaded["end"])
            table[mode][str(int(rate))] = {
                "fired": sorted(m for m, v in result["monitors"].items() if v["fired"]),
                "not_ok": {  # insufficient_data, or failed (a time limit, an error)
                    m: v["status"] for m, v in result["monitors"].items() if v["status"] != "ok"
                },
                "cycle_s": result["cycle_s"],
            }
            print(json.dumps({mode: table[mode]}), file=sys.stderr)
    same = {
        mode: all(
            {k: v for k, v in r.items() if k != "cycle_s"}
            == {k: v for k, v in next(iter(row.values())).items() if k != "cycle_s"}
            for r in row.values()
        )
        for mode, row in table.items()
    }
    return {"strength": args.strength, "hours": args.hours, "table": table, "same_verdicts": same}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="1000,10000,100000")
    ap.add_argument("--db", choices=["sqlite", "postgresql"], default="postgresql")
    ap.add_argument("--hours", type=float, default=6.0)
    ap.add_argument("--inject", default="FM-2")
    ap.add_argument("--strength", default="moderate")
    ap.add_argument(
        "--reuse", metavar="PG_DB",
        help="load into this PostgreSQL database once and keep it; later runs reuse it",
    )  # fmt: skip
    ap.add_argument(
        "--interval", type=float, default=900.0,
        help="the scheduler's interval: the steady cycle profiles this much new traffic",
    )  # fmt: skip
    ap.add_argument(
        "--cycle", nargs=3, metavar=("DB_URL", "END", "WARM_UP_S"), help=argparse.SUPPRESS
    )
    ap.add_argument(
        "--sweep", type=int, default=0, metavar="K",
        help="instead of the three cycles: a running scheduler's last K cycles, every "
        "--interval (with --inject '' the clean false-alarm check at volume)",
    )  # fmt: skip
    ap.add_argument(
        "--sweep-cycle", nargs=3, metavar=("DB_URL", "END", "K"), help=argparse.SUPPRESS
    )
    ap.add_argument(
        "--run-now", action="store_true",
        help="instead of the three cycles: the seven defaults run now one after another "
        "beside the scheduler's cycle",
    )  # fmt: skip
    ap.add_argument(
        "--run-now-round", nargs=3, metavar=("DB_URL", "END", "WARM_UP_S"), help=argparse.SUPPRESS
    )
    ap.add_argument("--modes", default=",".join(MODES), help="with --table: the modes injected")
    ap.add_argument(
        "--table", action="store_true",
        help="the detection table instead: each mode injected in turn, one cycle per rate",
    )  # fmt: skip
    args = ap.parse_args()
    if args.cycle:
        print(json.dumps(cycle(args.cycle[0], args.cycle[1], float(args.cycle[2]))))
        return
    if args.run_now_round:
        url, end, warm_up = args.run_now_round
        print(json.dumps(run_now_rounds(url, end, float(warm_up))))
        return
    if args.sweep_cycle:
        url, end, k = args.sweep_cycle
        print(json.dumps(sweep(url, end, int(k), args.interval)))
        return
    if args.table:
        print(json.dumps(detection_table(args), indent=2))
        return
    out: dict[str, Any] = {"db": args.db, "hours": args.hours, "inject": args.inject,
                           "strength": args.strength, "rates": {}}  # fmt: skip
    for rate in (float(r) for r in args.rates.split(",")):
        with reused_db(args.reuse, rate) if args.reuse else fresh_db(args.db) as url:
            loaded = (
                reused_load(url, args.hours)
                if args.reuse and _has_data(url)
                else load(url, rate, args.hours, args.inject or None, args.strength)
            )
            if args.run_now:
                out["rates"][str(int(rate))] = {
                    **loaded,
                    **run_now_vs_cycle(url, loaded["end"], args.interval),
                }
                continue
            if args.sweep:
                _clear_runs(url)
                out["rates"][str(int(rate))] = {**loaded, "sweep": _sweep_process(
                    url, loaded["end"], args.sweep, args.interval)}  # fmt: skip
                continue
            cold = _summary(_cycle_process(url, loaded["end"]))
            # Without the derive job, a scheduler that ran every interval has stored the
            # profiles of all but the last interval's traffic; with it (the default), of
            # all but what has not settled (TELLTALE_DERIVE_SETTLE_SECONDS, 30 s).
            unprofiled = forget_recent_profiles(url, seconds=args.interval)
            _clear_runs(url)
            no_derive = {**_summary(_cycle_process(url, loaded["end"], args.interval)),
                         "unprofiled_traces": unprofiled}  # fmt: skip
            unprofiled = forget_recent_profiles(url, seconds=30.0)
            _clear_runs(url)
            result = _cycle_process(url, loaded["end"], args.interval)
            result.update(
                unprofiled_traces=unprofiled, without_derive_job=no_derive, cold_cycle=cold
            )
        out["rates"][str(int(rate))] = {**loaded, **result}
        print(json.dumps({str(int(rate)): out["rates"][str(int(rate))]}), file=sys.stderr)
    if args.sweep or args.run_now:
        print(json.dumps(out, indent=2))
        return
    verdicts = {
        rate: {m: (v["status"], v["fired"]) for m, v in r["monitors"].items()}
        for rate, r in out["rates"].items()
    }
    first = next(iter(verdicts.values()))
    out["same_verdicts_as_lowest_rate"] = {rate: v == first for rate, v in verdicts.items()}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
