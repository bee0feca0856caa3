"""What dropping a day costs against deleting it row by row, on PostgreSQL.

    .venv/bin/python bench/retention.py [--traces 20000] [--spans-per-trace 10]

Two databases get the same expired day (traces, their spans, a score and a 64-d embedding
per trace, 40 days old) beside a day of fresh data: one at migration 0012 (unpartitioned,
so the job deletes in batches; an event id row for each span, score and embedding, as the
store wrote them then), one at head (partitioned, a partition for each of the last 40 days,
so the job drops the expired days; event id rows for the score and the embedding only, as
spans claim none now: their key is their identity). Also times what the monitor windows do, the
spans of 2,000 traces by trace id, which on the partitioned table probes every day kept. Times
one ``purge_all`` pass on each and prints JSON: rows expired, seconds, the WAL each wrote,
the tables' size on disk before and after.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from app import migrate  # noqa: E402
from app.db import make_engine  # noqa: E402
from app.models.base import utcnow  # noqa: E402
from app.retention.partitions import PARTITIONED, create_partition, partition_days  # noqa: E402
from app.retention.purge import purge_all  # noqa: E402
from bench.common import fresh_db  # noqa: E402

AGE_DAYS = 40


def _fill(
    engine: Engine, *, traces: int, per_trace: int, age_days: float, tag: str, span_ids: bool
) -> None:
    at = utcnow() - timedelta(days=age_days)
    params = {
        "n": traces,
        "k": per_trace,
        "at": at,
        "tag": tag,
        "ids": (per_trace if span_ids else 0) + 2,
    }
    attrs = "jsonb_build_object('gen_ai.request.model', 'gpt-x', 'n', g, 'pad', repeat('x', 200))"
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO traces (project_id, trace_id, agent, agent_version, status, source,"
                " attributes, created_at, started_at) SELECT 1, :tag || g, 'a', '1', 'ok',"
                " 'production', '{}', :at, :at FROM generate_series(1, :n) g"
            ),
            params,
        )
        conn.execute(
            text(
                "INSERT INTO spans (project_id, trace_id, span_id, kind, name, status,"
                f" started_at, attributes) SELECT 1, :tag || g, 's' || s, 'llm', 'step', 'ok',"
                f" :at, {attrs} FROM generate_series(1, :n) g, generate_series(1, :k) s"
            ),
            params,
        )
        conn.execute(
            text(
                "INSERT INTO scores (project_id, trace_id, name, value, kind, source, created_at)"
                " SELECT 1, :tag || g, 'ok', 1.0, 'proxy', 'online', :at"
                " FROM generate_series(1, :n) g"
            ),
            params,
        )
        conn.execute(
            text(
                "INSERT INTO embeddings (project_id, stream, model, dim, vector, trace_id,"
                " created_at) SELECT 1, 'out', '', 64, decode(repeat('00', 256), 'hex'),"
                " :tag || g, :at FROM generate_series(1, :n) g"
            ),
            params,
        )
        # The event id rows the store wrote for them, deleted in batches.
        conn.execute(
            text(
                "INSERT INTO ingest_events (project_id, event_id, type, created_at)"
                " SELECT 1, :tag || '-' || g || '-' || s, 'span', :at"
                " FROM generate_series(1, :n) g, generate_series(1, :ids) s"
            ),
            params,
        )
        conn.execute(text("ANALYZE"))


def _table_mb(engine: Engine) -> float:
    sql = (
        "SELECT sum(pg_total_relation_size(oid)) FROM pg_class "
        "WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace"
    )
    with engine.connect() as conn:
        return round(int(conn.scalar(text(sql)) or 0) / 2**20, 1)


def _lookup_ms(engine: Engine, traces: int) -> float:
    ids = [f"new{g}" for g in range(1, traces + 1, max(1, traces // 2000))][:2000]
    sql = text(
        "SELECT span_id, attributes FROM spans WHERE project_id = 1 AND trace_id = ANY(:ids)"
    )
    times = []
    with engine.connect() as conn:
        for _ in range(5):
            start = time.perf_counter()
            conn.execute(sql, {"ids": ids}).all()
            times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 1)


def _wal_bytes(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(text("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")) or 0)


def _one(revision: str, args: argparse.Namespace) -> dict[str, Any]:
    with fresh_db("postgresql") as url:
        migrate.upgrade(url, revision)
        engine = make_engine(url)
        try:
            with engine.begin() as conn:
                conn.execute(
                    text("INSERT INTO projects (id, name, created_at) VALUES (1, 'p', now())")
                )
                if revision == "heads":  # every day of the last AGE_DAYS has its partition
                    for table in PARTITIONED:
                        have = set(partition_days(conn, table))
                        for n in range(AGE_DAYS + 1):
                            day = (utcnow() - timedelta(days=n)).date()
                            if day not in have:
                                create_partition(conn, table, day)
            fill = {"traces": args.traces, "per_trace": args.spans_per_trace}
            span_ids = revision != "heads"
            _fill(engine, **fill, age_days=AGE_DAYS, tag="old", span_ids=span_ids)
            _fill(engine, **fill, age_days=1, tag="new", span_ids=span_ids)
            wal, size = _wal_bytes(engine), _table_mb(engine)
            start = time.perf_counter()
            deleted = purge_all(engine, default_days=30)
            seconds = time.perf_counter() - start
            lookup_ms = _lookup_ms(engine, args.traces)
            return {
                "schema": "partitioned" if revision == "heads" else "unpartitioned",
                # What the monitor windows do: the spans of 2,000 traces by trace id.
                "span_lookup_2000_traces_ms": lookup_ms,
                "seconds": round(seconds, 3),
                # Deleted rows free no disk until VACUUM, and then only for reuse.
                "table_mb_before": size,
                "table_mb_after": _table_mb(engine),
                "wal_mb": round((_wal_bytes(engine) - wal) / 2**20, 1),
                "rows_deleted_one_by_one": sum(deleted.values()),
            }
        finally:
            engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=20_000)
    parser.add_argument("--spans-per-trace", type=int, default=10)
    args = parser.parse_args()
    expired = args.traces * (2 * args.spans_per_trace + 5)  # at 0012; head has fewer id rows
    runs = [_one("0012_notification_groups", args), _one("heads", args)]
    print(json.dumps({"expired_rows": expired, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
