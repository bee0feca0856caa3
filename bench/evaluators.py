"""Online evaluators' throughput against a loopback judge that answers in 300 ms.

A judge server (:mod:`bench.fake_judge`) runs in its own process, so this process's CPU
time is the evaluator's alone (the queue, the content loading, the prompts, the ``openai``
client, the scores written). ``--traces`` traces with a model call and a tool call are
ingested through the ingest store and derived; one judge evaluator (``--concurrency``
calls in flight) then evaluates them through :func:`app.evaluators.runner.run_due`, as the
scheduler's job does. Prints JSON per run: evaluations/s over the wall time, CPU seconds
of this process per wall second (≤ 1.0 is "at most one core"), the calls the judge
counted, and the daily call budget (set below the traffic with ``--budget``, so the run
shows that it is never passed). Target (issue #51): ≥ 100 evaluations/s on ≤ 1 core.

    .venv/bin/python -m bench.evaluators --runs 3
    .venv/bin/python -m bench.evaluators --db postgresql --runs 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from bench.common import ROOT, free_port, fresh_db


def _events(n: int, start: datetime) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        tid, at = f"b{i:06d}", start + timedelta(milliseconds=50 * i)
        end = at + timedelta(seconds=3)
        msgs_in = json.dumps([{"role": "user", "parts": [
            {"type": "text", "content": f"Please refund order {i}; it arrived broken."}]}])
        msgs_out = json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": "Refunded." + (" RESOLVED" if i % 3 else "")}]}])
        out += [
            {"id": f"t{i}", "type": "trace", "body": {
                "trace_id": tid, "agent": "shop", "agent_version": "1",
                "started_at": at.isoformat(), "ended_at": end.isoformat()}},
            {"id": f"s{i}a", "type": "span", "body": {
                "trace_id": tid, "span_id": "tool", "kind": "tool", "name": "refund",
                "tool_name": "refund", "step_index": 0, "started_at": at.isoformat(),
                "ended_at": at.isoformat(),
                "attributes": {"gen_ai.tool.call.arguments": f'{{"order": {i}}}',
                               "gen_ai.tool.call.result": '{"ok": true}'}}},
            {"id": f"s{i}b", "type": "span", "body": {
                "trace_id": tid, "span_id": "llm", "kind": "llm", "name": "chat",
                "step_index": 1, "started_at": at.isoformat(), "ended_at": end.isoformat(),
                "attributes": {"gen_ai.input.messages": msgs_in,
                               "gen_ai.output.messages": msgs_out}}},
        ]  # fmt: skip
    return out


def one_run(db: str, traces: int, concurrency: int, delay: float, budget: int) -> dict[str, Any]:
    from sqlalchemy import func, select

    from app import migrate
    from app.db import make_engine, write_session
    from app.derive.job import derive_pending
    from app.evaluators import store
    from app.evaluators.runner import run_due
    from app.evaluators.spec import EvaluatorCreate
    from app.ingest.events import validate_events
    from app.ingest.store import write_events
    from app.keys import get_or_create_project
    from app.models import Score
    from app.models.evaluators import EvaluatorUsage
    from app.settings import Settings

    port = free_port()
    judge = subprocess.Popen(
        [sys.executable, "-m", "bench.fake_judge", "--port", str(port), "--delay", str(delay)],
        cwd=ROOT,
    )
    try:
        with fresh_db(db) as url:
            migrate.upgrade(url)
            engine = make_engine(url)
            start = datetime.now(UTC) - timedelta(minutes=30)
            with write_session(engine) as s:
                pid = get_or_create_project(s, name="bench").id
                ev = store.create(s, project_id=pid, body=EvaluatorCreate.model_validate({
                    "name": "judge", "kind": "llm_judge", "delay_seconds": 0,
                    "concurrency": concurrency, "daily_calls": budget,
                    "judge": {"base_url": f"http://127.0.0.1:{port}/v1", "model": "judge",
                              "prompt": "Was the request resolved?\n{conversation}"}}))  # fmt: skip
                ev.watch_from = start - timedelta(minutes=1)
            events = _events(traces, start)
            for i in range(0, len(events), 3000):
                valid, rejected = validate_events(events[i : i + 3000])
                assert not rejected, rejected[:2]
                write_events(engine, project_id=pid, events=valid)
            derive_pending(engine, now=datetime.now(UTC), settle_seconds=0, text_embeddings=False)
            for _ in range(50):  # the judge process is up
                try:
                    httpx.get(f"http://127.0.0.1:{port}/stats", timeout=1.0)
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            settings = Settings(database_url=url, judge_allow=["127.0.0.1/32"])
            wall0, cpu0 = time.perf_counter(), time.process_time()
            done = 0
            while True:
                got = run_due(engine, settings, max_seconds=600.0, now=None)
                done += got.done
                if not got.calls:
                    break
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            stats = httpx.get(f"http://127.0.0.1:{port}/stats", timeout=5.0).json()
            with engine.connect() as conn:
                scores = conn.scalar(select(func.count()).select_from(Score))
                used = conn.scalar(select(func.sum(EvaluatorUsage.calls)))
            engine.dispose()
    finally:
        judge.terminate()
        judge.wait()
    return {
        "db": db, "traces": traces, "concurrency": concurrency, "judge_delay_s": delay,
        "evaluations": done, "scores": scores, "wall_s": round(wall, 2),
        "evaluations_per_s": round(done / wall, 1), "cpu_s": round(cpu, 2),
        "cores_used": round(cpu / wall, 2), "judge_requests": stats["requests"],
        "judge_max_in_flight": stats["max_in_flight"], "daily_calls": budget,
        "calls_counted": used, "budget_kept": stats["requests"] <= budget,
    }  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", choices=["sqlite", "postgresql"], default="sqlite")
    p.add_argument("--traces", type=int, default=3000)
    p.add_argument("--budget", type=int, default=2500, help="daily calls (below --traces)")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--delay", type=float, default=0.3, help="the judge's answer time, seconds")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    runs = [one_run(args.db, args.traces, args.concurrency, args.delay, args.budget)
            for _ in range(args.runs)]  # fmt: skip
    for r in runs:
        print(json.dumps(r))
    print(json.dumps({
        "summary": True, "db": args.db, "runs": len(runs),
        "median_evaluations_per_s": statistics.median(r["evaluations_per_s"] for r in runs),
        "median_cores_used": statistics.median(r["cores_used"] for r in runs),
        "budget_kept_every_run": all(r["budget_kept"] for r in runs),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
