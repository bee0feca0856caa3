"""Alert-rule preview over 30 days at 10,000 traces/h, and the rollup build it reads.

Prints JSON per database (SQLite, PostgreSQL):

* ``rollup_build``: one hour of raw traffic at ``--rate`` traces/h from the scenario
  generator (``pipelines.scenarios``, spans and scores included, no embeddings) written
  through the ingest store, then the hour's buckets rebuilt from raw rows by the rollup
  job (:func:`app.rollups.job.rebuild_dirty`): seconds, and traces/s;
* ``history``: the 30 days of rollups. Generating and ingesting 7.2 M raw traces would take
  hours here, so the month is the built hour's rollup rows tiled over 30 days (row shapes
  and sketch sizes are the real ones), with each row's counts scaled by a daily cycle and
  noise, and an incident on day 25 (errors x4 on one agent for 3 h, latency x3): the
  preview then has episodes to find. Inserted directly (``executemany``), and said so;
* ``preview``: :func:`app.rules.preview.preview`, the route's server-side work (read the
  rollups, evaluate every 5-minute step, build the answer), timed in-process for several
  rules (a ratio, a grouped latency quantile from sketches, a grouped tool error rate,
  cost per hour per model, and two calibrated rules, which also read the 7 days before
  the month): median and max of ``--runs`` runs. Target: <= 5 s.

    .venv/bin/python -m bench.rule_preview            # both databases
    .venv/bin/python -m bench.rule_preview --db sqlite --runs 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from bench.common import fresh_db

END = datetime(2026, 12, 1, tzinfo=UTC)
DAYS = 30
RULES: dict[str, dict[str, Any]] = {
    "error_rate": {"metric": "trace_error_rate", "window_seconds": 900, "condition": {
        "type": "static", "op": "above", "warning": 0.15, "critical": 0.3, "for_seconds": 600}},
    "p95_by_agent": {"metric": "latency_p95", "group_by": ["agent"], "window_seconds": 900,
                     "condition": {"type": "static", "op": "above", "critical": 60000,
                                   "for_seconds": 900}},
    "tool_errors_by_tool": {"metric": "tool_error_rate", "group_by": ["tool"],
                            "condition": {"type": "static", "op": "above", "warning": 0.3}},
    "cost_per_hour_by_model": {"metric": "cost_per_hour", "group_by": ["model"],
                               "window_seconds": 3600,
                               "condition": {"type": "static", "op": "above", "warning": 50}},
    # Calibrated: each step tested against the 7 days before it (37 days read).
    "calibrated_error_rate_by_agent": {"metric": "trace_error_rate", "group_by": ["agent"],
                                       "window_seconds": 900,
                                       "condition": {"type": "calibrated"}},
    "calibrated_p95_by_agent": {"metric": "latency_p95", "group_by": ["agent"],
                                "window_seconds": 900, "condition": {"type": "calibrated"}},
}  # fmt: skip


def build_hour(url: str, rate: float) -> tuple[int, dict[str, Any]]:
    """One hour of raw traffic ingested, then its buckets rebuilt; returns the project."""
    from app import migrate
    from app.db import make_engine, write_session
    from app.ingest.events import validate_events
    from app.ingest.store import write_events
    from app.keys import get_or_create_project
    from app.rollups.job import backfill, rebuild_dirty
    from pipelines.scenarios import generate_workload

    migrate.upgrade(url)
    engine = make_engine(url)
    with write_session(engine) as s:
        pid = get_or_create_project(s, name="bench").id
    start = END - timedelta(hours=1)
    events = generate_workload(7, start, timedelta(hours=1), traces_per_hour=rate,
                               include_embeddings=False, images_per_hour=0.0)  # fmt: skip
    t = time.perf_counter()
    for i in range(0, len(events), 2000):
        valid, rejected = validate_events(events[i : i + 2000])
        assert not rejected, rejected[:2]
        write_events(engine, project_id=pid, events=valid)
    ingest_s = time.perf_counter() - t
    _analyze(engine)
    backfill(engine, project_id=pid, since=start)
    t = time.perf_counter()
    buckets = rebuild_dirty(engine)
    build_s = time.perf_counter() - t
    from sqlalchemy import func, select

    from app.models import Trace

    with engine.connect() as conn:
        traces = conn.scalar(select(func.count()).select_from(Trace).where(Trace.source == "production"))
    engine.dispose()
    return pid, {"events": len(events), "production_traces": traces, "ingest_s": round(ingest_s, 2),
                 "buckets": buckets, "build_s": round(build_s, 2),
                 "traces_per_s": round((traces or 0) / build_s)}  # fmt: skip


def _analyze(engine: Any) -> None:
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("ANALYZE")


def tile_history(url: str, pid: int) -> dict[str, Any]:
    """The built hour's rollup rows tiled over 30 days (see the module's notes)."""
    from sqlalchemy import insert, select

    from app.db import make_engine
    from app.rollups.build import TABLES
    from detectors.rules import sketch

    engine = make_engine(url)
    rng = np.random.default_rng(11)
    hour_start = int((END - timedelta(hours=1)).timestamp())
    with engine.connect() as conn:
        hour = {t: [dict(r._mapping) for r in conn.execute(select(t))] for t in TABLES}
    agents = sorted({r["agent"] for r in hour[TABLES[0]]})
    incident_lo = int((END - timedelta(days=5)).timestamp())
    incident_hi = incident_lo + 3 * 3600
    t = time.perf_counter()
    written = 0
    with engine.begin() as conn:
        for h in range(1, DAYS * 24):  # hour 0 is the built one
            shift = -h * 3600
            day_cycle = 0.6 + 0.4 * np.sin((hour_start + shift) / 86400 * 2 * np.pi)
            for table, rows in hour.items():
                out = []
                for r in rows:
                    b = r["bucket"] + shift
                    scale = max(0.05, day_cycle * rng.normal(1.0, 0.1))
                    bad = incident_lo <= b < incident_hi and r.get("agent") == agents[0]
                    out.append(_scaled(r, b, scale, bad, sketch))
                if out:
                    conn.execute(insert(table), out)
                    written += len(out)
    insert_s = time.perf_counter() - t
    _analyze(engine)
    engine.dispose()
    return {"rows": written, "insert_s": round(insert_s, 1),
            "note": "the built hour's rollup rows tiled over 30 days, inserted directly"}  # fmt: skip


_COUNTS = ("traces", "error_traces", "loop_traces", "labeled_traces", "calls", "errors",
           "scores", "passed")  # fmt: skip
_SUMS = ("tokens", "tokens_sq", "cost", "cost_sq", "total", "total_sq")


def _scaled(r: dict[str, Any], bucket: int, scale: float, bad: bool, sketch: Any) -> dict[str, Any]:
    out = dict(r, bucket=bucket)
    for k in _COUNTS:
        if k in out:
            out[k] = int(round(out[k] * scale))
    for k in _SUMS:
        if k in out:
            out[k] = type(out[k])(out[k] * scale)
    if bad:
        for num, den in (("error_traces", "traces"), ("errors", "calls")):
            if num in out:
                out[num] = min(out[den], out[num] * 4 + 1)
    if out.get("latency_sketch") and bad:
        keys, counts = sketch.decode(out["latency_sketch"])
        shifted = keys + sketch.MAPPING.key(3.0) - sketch.MAPPING.key(1.0)
        out["latency_sketch"] = sketch._pack(shifted, counts)
    return out


def time_previews(url: str, pid: int, runs: int) -> dict[str, Any]:
    from sqlalchemy.orm import Session

    from app.db import make_engine
    from app.rules.preview import preview
    from app.rules.schemas import PreviewRequest

    engine = make_engine(url)
    out: dict[str, Any] = {}
    for name, rule in RULES.items():
        req = PreviewRequest.model_validate({"rule": rule, "days": DAYS, "now": END.isoformat()})
        times, answer = [], None
        for _ in range(runs):
            with Session(engine) as session:
                t = time.perf_counter()
                answer = preview(session, project_id=pid, req=req, now=END)
                times.append(time.perf_counter() - t)
        assert answer is not None
        out[name] = {
            "median_s": round(statistics.median(times), 3), "max_s": round(max(times), 3),
            "groups": len(answer.groups), "points": sum(len(g.points) for g in answer.groups),
            "episodes": len(answer.episodes),
        }  # fmt: skip
    engine.dispose()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    ap.add_argument("--rate", type=float, default=10_000.0, help="traces/h")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    result: dict[str, Any] = {"rate_per_hour": args.rate, "days": DAYS, "target_s": 5.0}
    for kind in ("sqlite", "postgresql") if args.db == "both" else (args.db,):
        with fresh_db(kind) as url:
            pid, built = build_hour(url, args.rate)
            history = tile_history(url, pid)
            previews = time_previews(url, pid, args.runs)
        result[kind] = {"rollup_build": built, "history": history, "preview": previews}
        print(json.dumps({kind: result[kind]}), flush=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
