"""Soak: a steady ingest load with the detectors scheduled, watching memory and latency.

    .venv/bin/python bench/soak.py --minutes 10 --rate 4000 --db postgresql

Runs the real server (``telltale serve`` with its scheduler) against a fresh database,
preloads 6 hours of the scenario workload so every default monitor has a reference window,
then for ``--minutes`` sends (a) the scenario's own events as their simulated time comes
due and (b) synthetic span batches paced to ``--rate`` spans/s (use half the maximum that
bench/ingest.py measured). The default monitors run every 60 s on the live data. Prints one
JSON object: achieved rate, errors by status, request latency p50/p95/p99, the server's RSS
over time, and how many detector runs completed.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import count_rows, fresh_db, server, telltale  # noqa: E402
from bench.ingest import span_batch  # noqa: E402
from pipelines.scenarios import generate_workload  # noqa: E402


def rss_mb(pid: int) -> float:
    """Resident memory of the server process and its children, in MiB."""
    total = 0
    for p in [pid, *_children(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def _children(pid: int) -> list[int]:
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    out = [int(k) for k in kids]
    for k in list(out):
        out += _children(k)
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--db", choices=["sqlite", "postgresql"], default="postgresql")
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--rate", type=float, default=4000.0, help="synthetic spans per second")
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--monitor-interval", type=int, default=60)
    p.add_argument("--clients", type=int, default=4, help="concurrent senders")
    args = p.parse_args()

    now = datetime.now(UTC)
    start = now - timedelta(hours=6)
    end = now + timedelta(minutes=args.minutes)
    workload = generate_workload(3, start, end - start, traces_per_hour=240, embedding_dim=64)

    def at(ev: dict) -> float:
        body = ev["body"]
        t = body.get("started_at") or body.get("created_at")
        if t is None:
            return start.timestamp()
        return datetime.fromisoformat(t).timestamp() if isinstance(t, str) else float(t)

    workload.sort(key=at)
    preload = [e for e in workload if at(e) < now.timestamp()]
    live = [e for e in workload if at(e) >= now.timestamp()]

    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    rss: list[tuple[float, float]] = []
    sent_spans = 0

    with fresh_db(args.db) as db_url:
        with server(db_url, extra_env={"TELLTALE_SCHEDULER_ENABLED": "true"}, return_proc=True) as (
            url,
            proc,
        ):
            admin = telltale(
                "keys", "create", "--project", "soak", "--role", "admin", db_url=db_url
            )
            c = httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {admin}"})
            for i in range(0, len(preload), 2000):
                c.post("/api/v1/ingest", json={"events": preload[i : i + 2000]}).raise_for_status()
            c.post(
                "/api/v1/monitors/defaults", json={"interval_seconds": args.monitor_interval}
            ).raise_for_status()

            def post(body: bytes) -> None:
                t0 = time.perf_counter()
                try:
                    r = c.post(
                        "/api/v1/ingest", content=body, headers={"Content-Type": "application/json"}
                    )
                    code = r.status_code
                except httpx.HTTPError:
                    code = 599
                with lock:
                    latencies.append(time.perf_counter() - t0)
                    statuses[code] = statuses.get(code, 0) + 1

            rng = random.Random(0)
            pool = ThreadPoolExecutor(max_workers=args.clients)
            pending: list[Future[None]] = []
            t_start = time.monotonic()
            deadline = t_start + args.minutes * 60
            next_rss = t_start
            batch_no = 0
            live_i = 0
            interval = args.batch / args.rate
            next_send = t_start
            while time.monotonic() < deadline:
                tnow = time.monotonic()
                if tnow >= next_rss:
                    rss.append((round(tnow - t_start, 1), round(rss_mb(proc.pid), 1)))
                    next_rss += 15
                due = [
                    e
                    for e in live[live_i : live_i + 5000]
                    if at(e) <= now.timestamp() + (tnow - t_start)
                ]
                if due:
                    live_i += len(due)
                    pending.append(pool.submit(post, orjson.dumps({"events": due})))
                pending = [f for f in pending if not f.done()]
                if tnow >= next_send and len(pending) < args.clients * 2:
                    body = span_batch(f"soak{batch_no}", batch_no, args.batch, rng)
                    pending.append(pool.submit(post, body))
                    sent_spans += args.batch
                    batch_no += 1
                    next_send += interval
                else:
                    time.sleep(max(0.0, min(0.01, next_send - tnow)))
            pool.shutdown(wait=True)
            elapsed = time.monotonic() - t_start
            rss.append((round(elapsed, 1), round(rss_mb(proc.pid), 1)))
            runs = count_rows(db_url, "detector_runs")
            failed = count_rows(db_url, "detector_runs WHERE status = 'failed'")
            c.close()

    lat = sorted(latencies)
    q = lambda f: round(lat[min(len(lat) - 1, int(f * len(lat)))] * 1000, 1)  # noqa: E731
    print(
        json.dumps(
            {
                "db": args.db,
                "minutes": args.minutes,
                "target_spans_per_s": args.rate,
                "achieved_spans_per_s": round(sent_spans / elapsed),
                "requests": len(lat),
                "statuses": statuses,
                "errors": sum(n for code, n in statuses.items() if code >= 500),
                "latency_ms": {
                    "p50": q(0.5),
                    "p95": q(0.95),
                    "p99": q(0.99),
                    "max": round(lat[-1] * 1000, 1),
                },
                "rss_mb": {
                    "start": rss[0][1],
                    "end": rss[-1][1],
                    "max": max(r for _, r in rss),
                    "median": statistics.median(r for _, r in rss),
                    "timeline": rss,
                },
                "detector_runs": runs,
                "detector_runs_failed": failed,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
