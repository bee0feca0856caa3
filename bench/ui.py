"""Page latency with a large project: 100,000 traces (with spans and scores) in the DB.

    .venv/bin/python bench/ui.py --db postgresql --traces 100000 --rate 100000

Loads the traces through the ingest store (the same COPY path the API uses), spread over
the last ``traces / rate`` hours (100k traces/h: all of them in the last hour, what the
overview counts), plus one 500-span agent trace whose 250 LLM calls each repeat the
conversation so far in ``gen_ai.input.messages`` (as instrumentations send it); creates
the default monitors and runs them in one scheduler tick (each run keeps its window's
readiness counts, which the overview reads), logs in through /login like a browser, then times
every page over real HTTP. Prints JSON: per page the median and p95 of --repeat requests,
in milliseconds (the target is 300 ms for the overview and the 500-span trace page).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import fresh_db, server, telltale  # noqa: E402

BIG_TRACE = "big-trace-500"


def big_trace(start: datetime) -> list[dict]:
    """One agent run of 250 LLM calls and 250 tool calls (500 spans): each call's input
    repeats the whole conversation so far, its output asks for the next tool."""
    events: list[dict] = [{"id": "big", "type": "trace", "body": {
        "trace_id": BIG_TRACE, "agent": "agent-0", "agent_version": "1.0",
        "started_at": start.isoformat(), "ended_at": (start + timedelta(seconds=600)).isoformat(),
    }}]  # fmt: skip
    history: list[dict] = [{"role": "user", "parts": [{"type": "text", "content": "Rebook me"}]}]
    for k in range(250):
        t = start + timedelta(seconds=2.4 * k)
        answer = {"role": "assistant", "parts": [
            {"type": "text", "content": f"Step {k}: I will look up the reservation details again. " * 3},
            {"type": "tool_call", "id": f"call_{k}", "name": "get_reservation",
             "arguments": json.dumps({"reservation_id": f"R{k:04d}"})}]}  # fmt: skip
        attrs = {"gen_ai.input.messages": json.dumps(history),
                 "gen_ai.output.messages": json.dumps([answer])}  # fmt: skip
        events.append({"id": f"big-l{k}", "type": "span", "body": {
            "trace_id": BIG_TRACE, "span_id": f"l{k}", "kind": "llm", "name": "chat gpt-4o",
            "step_index": 2 * k, "started_at": t.isoformat(),
            "ended_at": (t + timedelta(seconds=1.8)).isoformat(), "request_model": "gpt-4o",
            "input_tokens": 400 + 60 * k, "output_tokens": 40, "cost": 0.001 + 0.00015 * k,
            "attributes": attrs}})  # fmt: skip
        result = json.dumps({"reservation_id": f"R{k:04d}", "status": "confirmed", "legs": 2})
        events.append({"id": f"big-t{k}", "type": "span", "body": {
            "trace_id": BIG_TRACE, "span_id": f"t{k}", "kind": "tool", "name": "get_reservation",
            "tool_name": "get_reservation", "step_index": 2 * k + 1,
            "started_at": (t + timedelta(seconds=1.9)).isoformat(),
            "ended_at": (t + timedelta(seconds=2.3)).isoformat(),
            "status": "error" if k % 40 == 7 else "ok",
            "attributes": {"gen_ai.tool.call.arguments": answer["parts"][1]["arguments"],
                           "gen_ai.tool.call.result": result}}})  # fmt: skip
        history += [answer, {"role": "tool", "parts": [
            {"type": "tool_call_response", "id": f"call_{k}", "response": result}]}]  # fmt: skip
    return events


def load(db_url: str, n_traces: int, rate: float) -> None:
    from app.db import make_engine
    from app.ingest.events import validate_events
    from app.ingest.store import write_events
    from app.models import Project
    from app.models.base import utcnow

    engine = make_engine(db_url)
    with engine.begin() as conn:
        project_id = conn.execute(Project.__table__.select().where(Project.name == "ui")).first()[0]
    span_s = 3600.0 * n_traces / rate
    start = datetime.now(UTC) - timedelta(seconds=span_s)
    batch: list[dict] = big_trace(datetime.now(UTC) - timedelta(minutes=30))
    for i in range(n_traces):
        t = start + timedelta(seconds=i * span_s / n_traces)
        tid = f"trace-{i:07d}"
        batch.append(
            {
                "id": f"t{i}",
                "type": "trace",
                "body": {
                    "trace_id": tid,
                    "agent": f"agent-{i % 5}",
                    "agent_version": f"1.{i % 3}",
                    "started_at": t.isoformat(),
                    "ended_at": (t + timedelta(seconds=4)).isoformat(),
                    "status": "error" if i % 17 == 0 else "ok",
                    "source": "eval" if i % 10 == 0 else "production",
                    "input_hash": f"h{i % 5000}",
                    "entry_point": "api",
                    "attributes": {"decision": f"d{i % 4}"},
                },
            }
        )
        for s in range(3):
            batch.append(
                {
                    "id": f"s{i}-{s}",
                    "type": "span",
                    "body": {
                        "trace_id": tid,
                        "span_id": f"s{s}",
                        "kind": ["plan", "tool", "llm"][s],
                        "tool_name": "search" if s == 1 else None,
                        "step_index": s,
                        "started_at": (t + timedelta(seconds=s)).isoformat(),
                        "confidence": 0.8,
                    },
                }
            )
        batch.append(
            {
                "id": f"c{i}",
                "type": "score",
                "body": {
                    "trace_id": tid,
                    "name": "helpfulness",
                    "value": (i % 10) / 10,
                    "kind": "proxy",
                },
            }
        )
        if len(batch) >= 5000:
            valid, rejected = validate_events(batch)
            assert not rejected
            write_events(engine, project_id=project_id, events=valid)
            batch = []
    if batch:
        write_events(engine, project_id=project_id, events=validate_events(batch)[0])
    _ = utcnow
    engine.dispose()


def cycle(db_url: str) -> dict[str, Any]:
    """One scheduler tick over the due (all new) monitors: its time and the runs' statuses."""
    from app.db import make_engine
    from app.scheduler.service import SchedulerService
    from app.settings import Settings

    engine = make_engine(db_url)
    t = time.perf_counter()
    runs = SchedulerService(Settings(database_url=db_url), engine, None).tick()
    took = round(time.perf_counter() - t, 1)
    engine.dispose()
    return {"seconds": took, "runs": {r.failure_mode: r.status for r in runs}}


def overview_cold(db_url: str, repeat: int) -> dict[str, float]:
    """The overview's read model built in this process with its minute cache emptied each
    time: every build is a first load in a minute (server time, no HTML rendering)."""
    from sqlalchemy.orm import Session

    from app.db import make_engine
    from app.models import Project
    from app.web import queries

    engine = make_engine(db_url)
    times = []
    with Session(engine) as session:
        pid = session.query(Project.id).filter(Project.name == "ui").scalar()
        for _ in range(repeat):
            queries._OVERVIEW_COUNTS.clear()
            t = time.perf_counter()
            queries.overview(session, project_id=pid)
            times.append((time.perf_counter() - t) * 1000)
            session.rollback()
    engine.dispose()
    times.sort()
    return {"median_ms": round(statistics.median(times), 1), "max_ms": round(times[-1], 1)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--db", choices=["sqlite", "postgresql"], default="postgresql")
    p.add_argument("--traces", type=int, default=100_000)
    p.add_argument("--rate", type=float, default=100_000.0, help="traces per hour")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--cycle", action=argparse.BooleanOptionalAction, default=True,
                   help="run every monitor once (one scheduler tick) before timing")  # fmt: skip
    args = p.parse_args()

    with fresh_db(args.db) as db_url:
        telltale("db", "upgrade", db_url=db_url)
        admin = telltale("keys", "create", "--project", "ui", "--role", "admin", db_url=db_url)
        t0 = time.perf_counter()
        load(db_url, args.traces, args.rate)
        load_s = time.perf_counter() - t0
        with server(db_url) as url, httpx.Client(base_url=url, timeout=60) as c:
            api = {"Authorization": f"Bearer {admin}"}
            monitors = c.post("/api/v1/monitors/defaults", json={}, headers=api).json()["monitors"]
            # A first verdict for the cards (untimed set-up): one scheduler cycle, in this
            # process, as the service runs it: every monitor as of the tick, sharing the
            # windows, each keeping its window's readiness counts for the overview.
            # --no-cycle: no run, so the overview counts on its first load in a minute.
            cycle_s = cycle(db_url) if args.cycle else None
            c.post(
                "/api/v1/queues",
                headers=api,
                json={
                    "name": "q",
                    "selection": {"agents": ["agent-0"]},
                    "label_schema": {"type": "categorical", "values": ["good", "bad"]},
                    "budget_per_period": 10,
                },
            )
            token = re.search(r'name="csrf" value="([^"]+)"', c.get("/login").text).group(1)
            r = c.post("/login", data={"api_key": admin, "csrf": token, "next": "/"})
            assert r.status_code in (200, 303), r.status_code
            pages = [
                "/",
                "/alerts",
                "/alerts?state=firing",
                "/traces",
                "/traces?agent=agent-3&status=error",
                "/traces?source=eval",
                "/traces?q=R0042",  # in the big trace's span attributes (tool arguments)
                "/traces?q=no-such-words",  # no match: a full page's scan of span content
                f"/traces/trace-{args.traces // 2:07d}",
                f"/traces/{BIG_TRACE}",
                f"/monitors/{monitors[0]['id']}",
                "/label",
                "/label/q",
            ]
            results = {}
            # The overview's first load in a minute (its readiness counts expire after 60
            # s): timed once before the repeats, which are then warm.
            t = time.perf_counter()
            assert c.get("/").status_code == 200
            cold_ms = round((time.perf_counter() - t) * 1000, 1)
            for page in pages:
                times = []
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    resp = c.get(page)
                    times.append((time.perf_counter() - t) * 1000)
                    assert resp.status_code == 200, (page, resp.status_code)
                times.sort()
                results[page] = {
                    "median_ms": round(statistics.median(times), 1),
                    "p95_ms": round(times[int(0.95 * (len(times) - 1))], 1),
                }
            cold = overview_cold(db_url, args.repeat)
    print(
        json.dumps(
            {
                "db": args.db,
                "traces": args.traces,
                "traces_per_hour": args.rate,
                "spans": args.traces * 3,
                "load_seconds": round(load_s, 1),
                "cycle_seconds": cycle_s,
                "repeat": args.repeat,
                "target_ms": 300,
                "overview_cold_ms": cold_ms,
                "overview_cold_server_ms": cold,
                "max_median_ms": max(r["median_ms"] for r in results.values()),
                "pages": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
