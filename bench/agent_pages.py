"""Server time of the agent pages over 7 days of rollups at 100,000 traces/h.

    .venv/bin/python -m bench.agent_pages                 # SQLite and PostgreSQL
    .venv/bin/python -m bench.agent_pages --db postgresql --runs 7

Prints JSON per database. **The rollups are filled directly, not built from traces**:
generating and deriving 16.8 M traces (7 days at 100k/h) would take hours here, and the
pages read only the rollups (plus index seeks on ``traces`` for an agent's existence and
last trace, and the open alerts). So the 7 days (and the hour before) are written as
rollup rows straight into ``trace_rollups``, ``tool_rollups``, ``model_rollups`` and
``score_rollups`` (``executemany``): per 5-minute bucket, ``--agents`` agents (traffic
shares 35/25/15/12/8/5 %, a daily cycle), two environments (prod 90 %, canary 10 %, the
canary one version ahead), three versions per agent over the week, six tools and two
models per agent, a ``true`` objective and a proxy score. Each row's latency sketch
encodes that many lognormal draws (traces: median 3 s; tools: 300 ms), so sketch sizes are
real. ``traces`` gets one row per agent and hour (the pages' index seeks find something;
at real volume they are the same seeks on a bigger index), each with seven spans (model
and tool calls, a repeated one among them) for the graph's sample, and two open alerts
name agents.

Then it logs in through ``/login`` with a read key and times, in process (ASGI, no
network: server time including the template), ``--runs`` GETs of: the agents home and an
agent page (the busiest agent) over 24 h and 7 days, the version comparison over 7 days and
the API's list over 7 days, and the graph over 7 days (its transitions read the spans of
a sample of at most 300 traces whatever the traffic; here the sample is the ~170 traces of
the agent). Median and max in ms. Target: <= 300 ms for the home and the agent page over
7 days.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from datetime import UTC, datetime
from typing import Any

import numpy as np

from bench.common import fresh_db

SHARES = (0.35, 0.25, 0.15, 0.12, 0.08, 0.05)
TOOLS = ("search", "http_fetch", "db_query", "calculator", "send_email", "kb_lookup")
MODELS = ("gpt-4o", "gpt-4o-mini")
BUCKET = 300


def fill(url: str, *, rate: float, days: int, n_agents: int, seed: int = 7) -> dict[str, Any]:
    """Write the rollups (see the module's notes); returns row counts and seconds."""
    from sqlalchemy import insert

    from app import migrate
    from app.db import make_engine, write_session
    from app.keys import create_key, get_or_create_project
    from app.models import (
        Alert,
        ModelRollup,
        Score,
        ScoreRollup,
        Span,
        ToolRollup,
        Trace,
        TraceRollup,
    )
    from detectors.rules import sketch

    migrate.upgrade(url)
    engine = make_engine(url)
    with write_session(engine) as s:
        pid = get_or_create_project(s, name="bench").id
        key = create_key(s, project_name="bench", role="read")
    rng = np.random.default_rng(seed)
    now = datetime.now(UTC)
    end = int(now.timestamp()) // BUCKET * BUCKET + BUCKET
    start = end - days * 86400 - 3600
    agents = [f"agent-{i}" for i in range(n_agents)]
    shares = np.array(SHARES[:n_agents] if n_agents <= 6 else [1.0] * n_agents)
    shares = shares / shares.sum()
    rows: dict[Any, list[dict[str, Any]]] = {TraceRollup: [], ToolRollup: [], ModelRollup: [], ScoreRollup: []}
    t0 = time.perf_counter()
    for b in range(start, end, BUCKET):
        cycle = 0.6 + 0.4 * np.sin(b / 86400 * 2 * np.pi)
        phase = min(2, int(3 * (b - start) / (end - start)))
        for a, share in zip(agents, shares, strict=True):
            for env, env_share, ahead in (("prod", 0.9, 0), ("canary", 0.1, 1)):
                n = int(rng.poisson(rate / 12 * share * env_share * cycle))
                if n == 0:
                    continue
                key_dims = {"project_id": pid, "bucket": b, "agent": a,
                            "agent_version": f"1.{min(2, phase + ahead)}", "environment": env}  # fmt: skip
                tokens = rng.gamma(4.0, 600.0, n)
                cost = tokens * 2.5e-6
                rows[TraceRollup].append({**key_dims, "traces": n,
                    "error_traces": int(rng.binomial(n, 0.04)), "loop_traces": int(rng.binomial(n, 0.02)),
                    "labeled_traces": int(rng.binomial(n, 0.2)),
                    "latency_sketch": sketch.encode(rng.lognormal(np.log(3000), 0.6, n)),
                    "tokens": int(tokens.sum()), "tokens_sq": float((tokens**2).sum()),
                    "cost": float(cost.sum()), "cost_sq": float((cost**2).sum())})  # fmt: skip
                for tool in TOOLS:
                    calls = int(rng.poisson(n * 0.5))
                    if calls:
                        rows[ToolRollup].append({**key_dims, "tool": tool, "calls": calls,
                            "errors": int(rng.binomial(calls, 0.05)),
                            "latency_sketch": sketch.encode(rng.lognormal(np.log(300), 0.8, calls))})  # fmt: skip
                for m, part in zip(MODELS, (0.7, 0.3), strict=True):
                    calls = int(n * 2 * part)
                    rows[ModelRollup].append({**key_dims, "model": m, "calls": calls, "errors": 0,
                        "unpriced_calls": 0, "tokens": int(tokens.sum() * part),
                        "tokens_sq": float((tokens**2).sum() * part), "cost": float(cost.sum() * part),
                        "cost_sq": float((cost**2).sum() * part)})  # fmt: skip
                for name, k in (("resolved", int(rng.binomial(n, 0.2))), ("helpfulness", n)):
                    if k:
                        passed = int(rng.binomial(k, 0.8))
                        rows[ScoreRollup].append({**key_dims, "name": name, "scores": k,
                                                  "total": float(passed), "total_sq": float(passed),
                                                  "passed": passed})  # fmt: skip
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    with engine.begin() as conn:
        for table, found in rows.items():
            for i in range(0, len(found), 5000):
                conn.execute(insert(table), found[i : i + 5000])
        hours = range(start, end, 3600)
        conn.execute(insert(Trace), [
            {"project_id": pid, "trace_id": f"{a}-{h}", "agent": a, "agent_version": "1.0",
             "started_at": datetime.fromtimestamp(h, tz=UTC),
             "ended_at": datetime.fromtimestamp(h + 3, tz=UTC), "status": "ok"}
            for a in agents for h in hours])  # fmt: skip
        steps = (("llm", None), ("tool", "search"), ("llm", None), ("tool", "db_query"),
                 ("tool", "db_query"), ("tool", "db_query"), ("llm", None))  # fmt: skip
        conn.execute(insert(Span), [
            {"project_id": pid, "trace_id": f"{a}-{h}", "span_id": f"s{k}", "kind": kind,
             "name": tool or "chat", "tool_name": tool, "step_index": k,
             "status": "error" if tool == "search" and h % 7 == 0 else "ok",
             "started_at": datetime.fromtimestamp(h + k * 0.4, tz=UTC),
             "ended_at": datetime.fromtimestamp(h + k * 0.4 + 0.3, tz=UTC),
             "response_model": None if tool else MODELS[0]}
            for a in agents for h in hours for k, (kind, tool) in enumerate(steps)])  # fmt: skip
        conn.execute(insert(Score), [
            {"project_id": pid, "trace_id": f"{agents[0]}-{start}", "name": n, "value": 1.0,
             "kind": k, "source": "delayed"} for n, k in (("resolved", "true"), ("helpfulness", "proxy"))])  # fmt: skip
        conn.execute(insert(Alert), [
            {"project_id": pid, "fingerprint": f"f{i}", "failure_mode": "RULE", "severity": "warning",
             "labels": {"agent": agents[i]}, "state": "firing", "summary": f"bench alert {i}",
             "first_fired_at": now, "last_fired_at": now} for i in range(2)])  # fmt: skip
    insert_s = time.perf_counter() - t0
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("ANALYZE")
    engine.dispose()
    counts = {t.__tablename__: len(r) for t, r in rows.items()}
    return {"key": key, "busiest": agents[0], "rows": counts, "generate_s": round(gen_s, 1),
            "insert_s": round(insert_s, 1), "days": days, "traces_per_hour": rate,
            "note": "rollups filled directly (not built from traces): see bench/agent_pages.py"}  # fmt: skip


def time_pages(url: str, key: str, busiest: str, runs: int) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.settings import Settings

    app = create_app(Settings(database_url=url, scheduler_enabled=False), start_background=False)
    out: dict[str, Any] = {}
    with TestClient(app) as client:
        token = re.search(r'name="csrf" value="([^"]+)"', client.get("/login").text).group(1)  # type: ignore[union-attr]
        r = client.post("/login", data={"api_key": key, "csrf": token, "next": "/agents"})
        assert r.status_code == 200 and "Agents" in r.text, r.text[:300]
        pages = {
            "home_24h": "/agents?range=24h", "home_7d": "/agents?range=7d",
            "agent_24h": f"/agents/{busiest}?range=24h", "agent_7d": f"/agents/{busiest}?range=7d",
            "compare_7d": f"/agents/{busiest}/compare?range=7d", "api_list_7d": "/api/v1/agents?range=7d",
            "graph_7d": f"/agents/{busiest}/graph?range=7d",
        }  # fmt: skip
        for name, path in pages.items():
            times = []
            for _ in range(runs + 1):  # the first warms the caches (templates, sketch edges)
                t = time.perf_counter()
                r = client.get(path)
                times.append((time.perf_counter() - t) * 1000)
                assert r.status_code == 200, (path, r.text[:300])
            times = times[1:]
            out[name] = {"median_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    ap.add_argument("--rate", type=float, default=100_000.0, help="traces/h")
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--agents", type=int, default=6)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    for kind in (["sqlite", "postgresql"] if args.db == "both" else [args.db]):
        with fresh_db(kind) as url:
            filled = fill(url, rate=args.rate, days=args.days, n_agents=args.agents)
            pages = time_pages(url, filled.pop("key"), filled.pop("busiest"), args.runs)
            print(json.dumps({"db": kind, "history": filled, "pages": pages, "target_ms": 300}))


if __name__ == "__main__":
    main()
