"""Rollups: what a bucket counts, kept right when traces grow, are derived and get late scores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from app.derive.job import derive_pending
from app.models import ModelRollup, RollupDirty, ScoreRollup, ToolRollup, TraceRollup, UserRollup
from app.rollups.buckets import bucket_of
from app.rollups.job import backfill, rebuild_dirty
from detectors.rules import sketch
from tests.app.rollups.traffic import T0, ingest, settle, trace


def rows(engine: Engine, model: Any) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(select(model)).all())


def test_a_bucket_counts_traces_tools_models_users_and_loops(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key = make_key("admin")
    events = (
        trace("a", at=T0, user="u1", tools=(("search", "ok"), ("search", "error")))
        + trace("b", at=T0 + timedelta(minutes=1), status="error", seconds=4, user="u1",
                tools=(("search", "ok"),) * 3)
        + trace("c", at=T0 + timedelta(minutes=2), env=None, user="u2")
        + trace("d", at=T0 + timedelta(minutes=6))  # the next bucket
    )  # fmt: skip
    ingest(client, key, events)
    settle(engine)
    by = {(r.bucket, r.environment): r for r in rows(engine, TraceRollup)}
    first = by[(bucket_of(T0), "prod")]
    assert (first.traces, first.error_traces, first.loop_traces) == (2, 1, 1)
    assert first.tokens == 200 and abs(first.cost - 0.02) < 1e-12
    lo, dense = sketch.accumulate([first.latency_sketch], rows=[0], n_rows=1)
    assert abs(sketch.quantiles(dense, lo, 1.0)[0] - 4000) / 4000 < 0.011
    assert by[(bucket_of(T0), "")].traces == 1  # no environment given
    assert by[(bucket_of(T0) + 300, "prod")].traces == 1
    tools = {(r.bucket, r.tool): (r.calls, r.errors) for r in rows(engine, ToolRollup)}
    assert tools == {(bucket_of(T0), "search"): (5, 1)}
    models = rows(engine, ModelRollup)
    assert {r.model for r in models} == {"gpt-x"} and sum(r.calls for r in models) == 4
    users = {r.user_id: (r.traces, r.error_traces) for r in rows(engine, UserRollup)}
    assert users == {"u1": (2, 1), "u2": (1, 0)}
    assert rows(engine, RollupDirty) == []


def test_a_late_span_and_a_delayed_label_rebuild_the_old_bucket(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key = make_key("admin")
    ingest(client, key, trace("a", at=T0))
    settle(engine)
    assert [r.traces for r in rows(engine, TraceRollup)] == [1]
    # a late failed tool call of the same trace, and a delayed ground-truth label
    ingest(client, key, [{"id": "late", "type": "span", "body": {
        "trace_id": "a", "span_id": "late", "kind": "tool", "tool_name": "pay", "status": "error",
        "started_at": T0.isoformat(), "ended_at": (T0 + timedelta(seconds=1)).isoformat()}}])  # fmt: skip
    ingest(client, key, [{"id": "label", "type": "score", "body": {
        "trace_id": "a", "name": "resolved", "value": 1.0, "kind": "true", "source": "human"}}])  # fmt: skip
    settle(engine)
    (r,) = rows(engine, TraceRollup)
    assert (r.traces, r.labeled_traces) == (1, 1)
    assert [(t.tool, t.errors) for t in rows(engine, ToolRollup)] == [("pay", 1)]
    (s,) = rows(engine, ScoreRollup)
    assert (s.name, s.scores, s.passed) == ("resolved", 1, 1)


def test_a_mark_moved_during_a_rebuild_keeps_the_bucket_dirty(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    from app.db import write_transaction
    from app.rollups import build, dirty

    key = make_key("admin")
    ingest(client, key, trace("a", at=T0))
    derive_pending(engine, now=datetime.now(UTC) + timedelta(minutes=5), text_embeddings=False)
    with engine.connect() as conn:
        (seen,) = dirty.oldest(conn, limit=10)
    with write_transaction(engine) as conn:  # a change lands after the mark was read
        dirty.mark(conn, project_id=seen.project_id, buckets=[seen.bucket])
    build.rebuild(engine, seen)
    assert len(rows(engine, RollupDirty)) == 1
    assert rebuild_dirty(engine) == 1 and rows(engine, RollupDirty) == []


def test_backfill_marks_history_and_the_job_rolls_it_up(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key = make_key("admin")
    ingest(client, key, trace("a", at=T0) + trace("b", at=T0 + timedelta(hours=1)))
    derive_pending(engine, now=datetime.now(UTC) + timedelta(minutes=5), text_embeddings=False)
    with engine.begin() as conn:  # as if stored before the rollups existed
        conn.execute(RollupDirty.__table__.delete())
    from app.models import Project

    with engine.connect() as conn:
        pid = conn.scalar(select(Project.id))
    assert backfill(engine, project_id=pid) == 13  # 10:00 .. 11:00, every bucket between
    assert rebuild_dirty(engine) == 13
    assert sorted(r.traces for r in rows(engine, TraceRollup)) == [1, 1]
