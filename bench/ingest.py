"""Native ingestion throughput over real HTTP, counted as durable rows afterwards.

    .venv/bin/python bench/ingest.py --db postgresql [--spans 200000] [--clients 4]

Prints one JSON object: db, spans_per_s, embeddings_per_s (the JSON body, base64 vectors),
embeddings_binary_per_s (the binary body: a JSON header line, then raw float32), each the
median of --repeat runs, and the per-run figures. Batches are encoded before the clock
starts so the client's own JSON work does not count against the server (both share the
same 2 cores). Each timed phase starts after the last one's autovacuum and a checkpoint.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    count_rows,
    cpu_now,
    drive,
    fresh_db,
    server,
    server_pids,
    settle,
    telltale,
)

JSON = "application/json"
BINARY_TYPE = "application/vnd.telltale.vectors"  # app.ingest.vectors.BINARY_TYPE

TOOLS = ["search", "db_query", "calculator", "http_fetch", "vector_lookup"]

# Today (UTC): on PostgreSQL spans then land in a daily partition the migration made, as
# live traffic does, not in the DEFAULT partition a fixed old date would reach.
DAY = datetime.now(UTC).date().isoformat()


def span_batch(run: str, b: int, size: int, rng: random.Random) -> bytes:
    events = []
    for i in range(size):
        trace = f"{run}-{b}-{i // 10}"
        n_attr = rng.randint(10, 20)
        attrs = {f"attr.{k}": rng.choice(["alpha", "beta", 3, 2.5, True]) for k in range(n_attr)}
        attrs.update(
            {"gen_ai.request.model": "gpt-x", "gen_ai.usage.input_tokens": rng.randint(10, 900)}
        )
        events.append(
            {
                "id": f"{run}-{b}-{i}",
                "type": "span",
                "body": {
                    "trace_id": trace,
                    "span_id": f"s{i % 10}",
                    "parent_span_id": None if i % 10 == 0 else "s0",
                    "kind": rng.choice(["llm", "tool", "plan", "retrieval"]),
                    "name": "step",
                    "tool_name": rng.choice(TOOLS),
                    "status": "error" if rng.random() < 0.05 else "ok",
                    "started_at": f"{DAY}T10:00:00.123Z",
                    "ended_at": f"{DAY}T10:00:01.456Z",
                    "step_index": i % 10,
                    "confidence": round(rng.random(), 3),
                    "attributes": attrs,
                },
            }
        )
    return orjson.dumps({"events": events})


def embedding_batch(
    run: str, b: int, size: int, dim: int, rng: np.random.Generator, *, binary: bool = False
) -> bytes:
    """One batch as the JSON body (base64 block) or the binary body (header line + raw)."""
    m = rng.standard_normal((size, dim)).astype("<f4")
    header = {
        "stream": "bench.image",
        "model": "ViT-B-32",
        "dtype": "float32",
        "dim": dim,
        "sample_ids": [f"{run}-{b}-{i}" for i in range(size)],
    }
    if binary:
        return orjson.dumps(header) + b"\n" + m.tobytes()
    return orjson.dumps({**header, "vectors_b64": base64.b64encode(m.tobytes()).decode()})


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--db", choices=["sqlite", "postgresql"], default="postgresql")
    p.add_argument("--spans", type=int, default=100_000)
    p.add_argument("--embeddings", type=int, default=200_000)
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--emb-batch", type=int, default=2000)
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--warmup", type=int, default=20, help="untimed span batches first")
    p.add_argument(
        "--vector-bodies",
        default="json,binary",
        help="embedding bodies to time, in this order: json (base64 block), binary",
    )
    args = p.parse_args()
    if not set(args.vector_bodies.split(",")) <= {"json", "binary"}:
        p.error("--vector-bodies: a comma list of json and binary")

    runs = []
    with fresh_db(args.db) as db_url:
        with server(db_url, workers=args.workers) as url:
            key = telltale(
                "keys", "create", "--project", "bench", "--role", "ingest", db_url=db_url
            )
            # Untimed: the first requests of a new server pay for its pool's connections,
            # their PostgreSQL backends' catalog caches and the statements' first plans
            # (the first timed repeat ran 15-25% slower without this).
            warm = random.Random(-1)
            warm_spans = [span_batch("w", b, args.batch, warm) for b in range(args.warmup)]
            drive(url, key, "/api/v1/ingest", warm_spans, args.clients, JSON)
            for rep in range(args.repeat):
                run = f"r{rep}"
                rng = random.Random(rep)
                spans = [
                    span_batch(run, b, args.batch, rng) for b in range(args.spans // args.batch)
                ]
                before = count_rows(db_url, "spans")
                settle(db_url)
                procs = server_pids(url.rsplit(":", 1)[1])
                cpu0 = cpu_now(procs, db_url)
                t_spans = drive(url, key, "/api/v1/ingest", spans, args.clients, JSON)
                cpu1 = cpu_now(procs, db_url)
                stored_spans = count_rows(db_url, "spans") - before
                result = {
                    "spans": stored_spans,
                    "spans_s": round(t_spans, 3),
                    "spans_per_s": round(stored_spans / t_spans),
                    # CPU per span, which holds when the machine's speed varies by day.
                    "server_cpu_us_per_span": round((cpu1[0] - cpu0[0]) / stored_spans * 1e6, 1),
                    "db_cpu_us_per_span": round((cpu1[1] - cpu0[1]) / stored_spans * 1e6, 1),
                }
                nrng = np.random.default_rng(rep)
                for body in args.vector_bodies.split(","):
                    binary = body == "binary"
                    batches = [
                        embedding_batch(
                            f"{run}{body}", b, args.emb_batch, args.dim, nrng, binary=binary
                        )
                        for b in range(args.embeddings // args.emb_batch)
                    ]
                    before = count_rows(db_url, "embeddings")
                    settle(db_url)
                    ctype = BINARY_TYPE if binary else JSON
                    cpu0 = cpu_now(procs, db_url)
                    took = drive(url, key, "/api/v1/embeddings", batches, args.clients, ctype)
                    cpu1 = cpu_now(procs, db_url)
                    stored = count_rows(db_url, "embeddings") - before
                    name = "embeddings_binary" if binary else "embeddings"
                    result.update(
                        {
                            name: stored,
                            f"{name}_s": round(took, 3),
                            f"{name}_per_s": round(stored / took),
                            f"{name}_server_cpu_us": round((cpu1[0] - cpu0[0]) / stored * 1e6, 1),
                            f"{name}_db_cpu_us": round((cpu1[1] - cpu0[1]) / stored * 1e6, 1),
                        }
                    )
                runs.append(result)
    print(
        json.dumps(
            {
                "db": args.db,
                "path": "native-json",
                "batch": args.batch,
                "clients": args.clients,
                "workers": args.workers,
                "spans_per_s": statistics.median(r["spans_per_s"] for r in runs),
                **{
                    f"{name}_per_s": statistics.median(r[f"{name}_per_s"] for r in runs)
                    for name in ("embeddings", "embeddings_binary")
                    if f"{name}_per_s" in runs[0]
                },
                "dim": args.dim,
                "runs": runs,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
