"""Page latency with a large project: 100,000 traces (with spans and scores) in the DB.

    .venv/bin/python bench/ui.py --db postgresql --traces 100000

Loads the traces through the ingest store (the same COPY path the API uses), creates the
default monitors with a few runs and an alert, logs in through /login like a browser, then
times every page over real HTTP. Prints JSON: per page the median and p95 of --repeat
requests, in milliseconds.
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

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import fresh_db, server, telltale  # noqa: E402


def load(db_url: str, n_traces: int) -> None:
    from app.db import make_engine
    from app.ingest.events import validate_events
    from app.ingest.store import write_events
    from app.models import Project
    from app.models.base import utcnow

    engine = make_engine(db_url)
    with engine.begin() as conn:
        project_id = conn.execute(Project.__table__.select().where(Project.name == "ui")).first()[0]
    start = datetime.now(UTC) - timedelta(hours=24)
    batch: list[dict] = []
    for i in range(n_traces):
        t = start + timedelta(seconds=i * 86400 / n_traces)
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


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--db", choices=["sqlite", "postgresql"], default="postgresql")
    p.add_argument("--traces", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=20)
    args = p.parse_args()

    with fresh_db(args.db) as db_url:
        telltale("db", "upgrade", db_url=db_url)
        admin = telltale("keys", "create", "--project", "ui", "--role", "admin", db_url=db_url)
        t0 = time.perf_counter()
        load(db_url, args.traces)
        load_s = time.perf_counter() - t0
        with server(db_url) as url, httpx.Client(base_url=url, timeout=60) as c:
            api = {"Authorization": f"Bearer {admin}"}
            monitors = c.post("/api/v1/monitors/defaults", json={}, headers=api).json()["monitors"]
            for m in monitors[:3]:
                c.post(f"/api/v1/monitors/{m['id']}/run", json={}, headers=api)
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
                f"/traces/trace-{args.traces // 2:07d}",
                f"/monitors/{monitors[0]['id']}",
                "/label",
                "/label/q",
            ]
            results = {}
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
    print(
        json.dumps(
            {
                "db": args.db,
                "traces": args.traces,
                "spans": args.traces * 3,
                "load_seconds": round(load_s, 1),
                "repeat": args.repeat,
                "target_ms": 300,
                "max_median_ms": max(r["median_ms"] for r in results.values()),
                "pages": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
