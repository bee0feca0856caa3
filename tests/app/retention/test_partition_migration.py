"""Migration 0013 on PostgreSQL: a database populated at 0012 comes out partitioned with every
row, id sequence, key and foreign key kept, and goes back down the same way."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, insert, text
from sqlalchemy.exc import IntegrityError

from app import migrate
from app.db import make_engine, write_session
from app.models import Embedding, Score, Span, SpanEvent
from app.models.base import utcnow
from app.retention.partitions import PARTITIONED, partition_days
from tests.conftest import empty_database

NOW = utcnow()
TODAY = NOW.date()


def _project(engine: Engine) -> int:
    """A project row written without the model, whose columns are the head revision's."""
    with engine.begin() as conn:
        made = conn.execute(text("INSERT INTO projects (name, created_at) VALUES ('p1', now())"
                                 " RETURNING id"))  # fmt: skip
        return int(made.scalar_one())


def _populate(engine: Engine, pid: int) -> None:
    ages: list[float | None] = [40, 3, 0, -10, None]  # days ago; -10: a clock ahead
    with write_session(engine) as s:
        for n, age in enumerate(ages):
            at = None if age is None else NOW - timedelta(days=age)
            # Only the columns of revision 0012: the model has grown since (cost_source).
            s.execute(
                insert(Span.__table__).values(
                    project_id=pid, trace_id=f"t{n}", span_id="s", kind="step", name="",
                    status="ok", started_at=at, attributes={"n": n},
                )
            )  # fmt: skip
            s.add(SpanEvent(project_id=pid, trace_id=f"t{n}", span_id="s", name="e", time=at))
            created = at or NOW
            s.add(Score(project_id=pid, trace_id=f"t{n}", name="ok", value=n, created_at=created))
            s.add(
                Embedding(
                    project_id=pid, stream="out", dim=1, vector=bytes([n, 0, 0, 0]),
                    trace_id=f"t{n}", created_at=created,
                )
            )  # fmt: skip


ZERO_TWELVE = {
    "spans": ("id", "project_id", "trace_id", "span_id", "parent_span_id", "kind", "name",
              "tool_name", "status", "error_type", "started_at", "ended_at", "step_index",
              "confidence", "request_model", "response_model", "input_tokens", "output_tokens",
              "total_tokens", "cost", "latency_ms", "attributes"),
}  # fmt: skip


def _snapshot(engine: Engine) -> dict[str, list[Any]]:
    with engine.connect() as conn:
        return {
            # The columns of revision 0012 (later revisions add columns, e.g. cost_source).
            t: [tuple(r[c] for c in ZERO_TWELVE.get(t, r.keys()))
                for r in conn.execute(text(f"SELECT * FROM {t} ORDER BY id")).mappings()]
            for t in PARTITIONED
        }  # fmt: skip


def _kinds(engine: Engine) -> dict[str, str]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT relname, relkind FROM pg_class WHERE relname = ANY(:t)"),
            {"t": list(PARTITIONED)},
        )
        return {name: kind for name, kind in rows}


def _in_default(engine: Engine, table: str) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(text(f"SELECT count(*) FROM {table}_default")) or 0)


@pytest.mark.parametrize("backend", ["postgresql"])
def test_0012_data_comes_through_partitioning_and_back(backend, tmp_path, request) -> None:
    url = empty_database(backend, tmp_path, request)
    migrate.upgrade(url, "0012_notification_groups")
    engine = make_engine(url)
    try:
        pid = _project(engine)
        _populate(engine, pid)
        before = _snapshot(engine)

        migrate.upgrade(url, "0015_step_profiles")

        assert _kinds(engine) == {t: "p" for t in PARTITIONED}
        assert _snapshot(engine) == before
        with engine.connect() as conn:
            for table in PARTITIONED:
                days = partition_days(conn, table)
                # From the oldest row's day to three days ahead, every day.
                assert days[0] == (NOW - timedelta(days=40)).date(), table
                assert days[-1] == TODAY + timedelta(days=3), table
                assert len(days) == (days[-1] - days[0]).days + 1, table
                fks = conn.scalar(
                    text(
                        "SELECT count(*) FROM pg_constraint WHERE contype = 'f' "
                        "AND conrelid = CAST(:t AS regclass)"
                    ),
                    {"t": table},
                )
                assert fks == 1, table
        migrate.upgrade(url)  # 0016 drops the ingest tables' project keys, every partition's
        with engine.connect() as conn:
            fks = conn.scalar(
                text(
                    "SELECT count(*) FROM pg_constraint WHERE contype = 'f' "
                    "AND conrelid IN (SELECT inhrelid FROM pg_inherits UNION "
                    "SELECT CAST(t AS regclass) FROM unnest(CAST(:t AS text[])) AS t)"
                ),
                {"t": list(PARTITIONED)},
            )
        assert fks == 0
        assert _snapshot(engine) == before
        # A clock 10 days ahead (past the days made) and no start: DEFAULT.
        assert _in_default(engine, "spans") == 2 and _in_default(engine, "span_events") == 2
        assert _in_default(engine, "scores") == 1 and _in_default(engine, "embeddings") == 1

        with write_session(engine) as s:  # the id sequences go on counting
            span = Span(project_id=pid, trace_id="new", span_id="s", started_at=NOW)
            s.add(span)
            s.flush()
            assert span.id > max(r[0] for r in before["spans"])
        for start in (NOW - timedelta(days=3), None):  # the span key holds, NULL start too
            with pytest.raises(IntegrityError), write_session(engine) as s:
                trace = "t1" if start is not None else "t4"
                s.add(Span(project_id=pid, trace_id=trace, span_id="s", started_at=start))
        after = _snapshot(engine)

        migrate.downgrade(url, "0012_notification_groups")

        assert _kinds(engine) == {t: "r" for t in PARTITIONED}
        assert _snapshot(engine) == after
        with engine.connect() as conn:
            leftovers = conn.scalar(
                text("SELECT count(*) FROM pg_class WHERE relname ~ '_(p[0-9]{8}|default)$'")
            )
        assert leftovers == 0
        migrate.upgrade(url)
        assert _snapshot(engine) == after
    finally:
        engine.dispose()
