"""Time partitions on PostgreSQL (app/retention/partitions.py) and what retention keeps on
both databases: whole days older than every project's cutoff are dropped (a catalog change,
not deleted rows), newer days and open alerts' evidence stay, re-sent spans stay duplicates,
ingest keeps answering while days are dropped."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, func, select, text, update

from app.db import make_sessionmaker, write_session
from app.models import (
    Alert,
    DetectorRun,
    Embedding,
    Finding,
    Project,
    Score,
    Span,
    SpanEvent,
    Trace,
)
from app.models.base import utcnow
from app.retention.partitions import (
    PARTITIONED,
    create_partition,
    default_partition,
    maintain_partitions,
    partition_days,
)
from app.retention.purge import purge_all
from app.scheduler.jobs import periodic_jobs
from app.scheduler.service import SchedulerService
from tests.app.engine_helpers import add_monitor, setup_project
from tests.conftest import auth

NOW = utcnow()
TODAY = NOW.date()


def _days_ago(n: int) -> datetime:
    return NOW - timedelta(days=n)


def _count(engine: Engine, model: Any, *where: Any) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(select(func.count()).select_from(model).where(*where)) or 0)


def _make_days(engine: Engine, first_days_ago: int) -> None:
    """Daily partitions of every partitioned table from ``first_days_ago`` up to today."""
    for table in PARTITIONED:
        with engine.connect() as conn:
            have = set(partition_days(conn, table))
        for n in range(first_days_ago, -1, -1):
            if (day := TODAY - timedelta(days=n)) not in have:
                with engine.begin() as conn:
                    create_partition(conn, table, day)


def _rows(engine: Engine, pid: int, tag: str, at: datetime) -> None:
    """One trace with two spans, a span event, a score and an embedding, all at ``at``."""
    with write_session(engine) as s:
        s.add(Trace(project_id=pid, trace_id=tag, created_at=at, started_at=at))
        for i in range(2):
            s.add(Span(project_id=pid, trace_id=tag, span_id=f"s{i}", started_at=at))
        s.add(SpanEvent(project_id=pid, trace_id=tag, span_id="s0", name="gen_ai.choice", time=at))
        s.add(Score(project_id=pid, trace_id=tag, name="ok", value=1.0, created_at=at))
        s.add(
            Embedding(
                project_id=pid, stream="out", dim=1, vector=b"\0\0\0\0", trace_id=tag,
                created_at=at,
            )
        )  # fmt: skip


def _kept(engine: Engine, pid: int) -> dict[str, set[str]]:
    """Per table, the trace ids of the project's rows still stored."""
    out = {}
    for model in (Trace, Span, SpanEvent, Score, Embedding):
        with engine.connect() as conn:
            ids = conn.scalars(select(model.trace_id).where(model.project_id == pid))
            out[model.__tablename__] = set(ids)
    return out


def test_old_days_go_whole_newer_rows_and_open_evidence_stay(engine: Engine) -> None:
    pg = engine.dialect.name == "postgresql"
    if pg:
        _make_days(engine, 45)
    long_kept, short_kept = setup_project(engine, "archive"), setup_project(engine, "scratch")
    with write_session(engine) as s:
        s.execute(update(Project).where(Project.id == short_kept).values(retention_days=10))
    for pid in (long_kept, short_kept):  # the long one follows the default: 30 days
        _rows(engine, pid, "d40", _days_ago(40))
        _rows(engine, pid, "d20", _days_ago(20))
        _rows(engine, pid, "d1", _days_ago(1))
    monitor = add_monitor(engine, long_kept, "FM-2")
    with write_session(engine) as s:  # an open alert's evidence from 40 days ago
        run = DetectorRun(
            project_id=long_kept, monitor_id=monitor, failure_mode="FM-2", at=_days_ago(40),
            window_start=_days_ago(40), window_end=_days_ago(40), status="ok", fired=True,
        )  # fmt: skip
        s.add(run)
        s.flush()
        alert = Alert(
            project_id=long_kept, monitor_id=monitor, fingerprint="fp", failure_mode="FM-2",
            severity="warning", state="firing", first_fired_at=_days_ago(40),
            last_fired_at=_days_ago(40),
        )  # fmt: skip
        s.add(alert)
        s.flush()
        s.add(
            Finding(
                project_id=long_kept, monitor_id=monitor, run_id=run.id, alert_id=alert.id,
                failure_mode="FM-2", severity="warning", at=_days_ago(40),
            )
        )  # fmt: skip

    deleted = purge_all(engine, default_days=30, now=NOW)

    tables = ("traces", "spans", "span_events", "scores", "embeddings")
    assert _kept(engine, long_kept) == {t: {"d20", "d1"} for t in tables}
    assert _kept(engine, short_kept) == {t: {"d1"} for t in tables}
    assert _count(engine, Finding) == 1 and _count(engine, DetectorRun) == 1
    if pg:
        # The 40-day rows left by dropping their days, not by row deletes: only the
        # short-retention project's 20-day rows were deleted one by one.
        assert deleted["spans"] == 2 and deleted["scores"] == 1 and deleted["embeddings"] == 1
        assert deleted["span_events"] == 1
        cutoff_day = (NOW - timedelta(days=30)).date()
        with engine.connect() as conn:
            for table in PARTITIONED:
                days = partition_days(conn, table)
                assert min(days) == cutoff_day, table  # the day the cutoff falls in stays
                assert max(days) == TODAY + timedelta(days=3), table
    else:
        assert deleted["spans"] == 6 and deleted["scores"] == 3


pg_only = pytest.mark.parametrize("backend", ["postgresql"])


@pg_only
def test_the_job_makes_days_ahead_and_moves_early_rows_out_of_default(engine: Engine) -> None:
    pid = setup_project(engine)
    later = NOW + timedelta(days=6)  # a clock six days ahead: no partition for it yet
    _rows(engine, pid, "skewed", later)
    with engine.connect() as conn:
        span_default = conn.scalar(text(f"SELECT count(*) FROM {default_partition('spans')}"))
    assert span_default == 2

    changes = maintain_partitions(engine, now=NOW + timedelta(days=3), keep_from=_days_ago(400))

    assert not changes.failed and not changes.dropped
    assert f"spans_p{later:%Y%m%d}" in changes.created
    with engine.connect() as conn:
        for table in PARTITIONED:
            days = partition_days(conn, table)
            assert TODAY + timedelta(days=6) in days and TODAY + timedelta(days=5) in days
            assert conn.scalar(text(f"SELECT count(*) FROM {default_partition(table)}")) == 0
            assert conn.scalar(text(f"SELECT count(*) FROM {table}_p{later:%Y%m%d}")) >= 1
    assert _kept(engine, pid)["spans"] == {"skewed"}
    again = maintain_partitions(engine, now=NOW + timedelta(days=3), keep_from=_days_ago(400))
    assert again.created == [] and again.failed == []


def test_vectors_stay_inline_in_migrated_and_new_partitions(engine: Engine) -> None:
    """A 512-d float32 vector (2,048 bytes) is neither compressed nor moved to TOAST: in
    today's partition (made by the migrations), a partition the job makes later, and
    DEFAULT (migration 0014)."""
    if engine.dialect.name != "postgresql":
        pytest.skip("TOAST is PostgreSQL's")
    pid = setup_project(engine)
    later = NOW + timedelta(days=6)
    maintain_partitions(engine, now=NOW + timedelta(days=3), keep_from=_days_ago(400))
    vector = bytes(range(256)) * 8
    with write_session(engine) as s:
        for at in (NOW, later, None):
            s.add(
                Embedding(project_id=pid, stream="img", dim=512, vector=vector,
                          created_at=at or datetime(1990, 1, 1, tzinfo=UTC))
            )  # fmt: skip
    parts = ["embeddings_p" + f"{NOW:%Y%m%d}", f"embeddings_p{later:%Y%m%d}", "embeddings_default"]
    with engine.connect() as conn:
        for part in parts:
            stored = conn.execute(
                text(f"SELECT pg_column_size(vector), pg_column_compression(vector) FROM {part}")
            ).one()
            toast = conn.scalar(
                text("SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE relname = :part"),
                {"part": part},
            )
            assert stored == (2048 + 4, None), part  # the varlena header, no compression
            assert toast == 0, part


def _span(event_id: str, started_at: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"trace_id": "t-1", "span_id": "s-1", "name": "llm"}
    if started_at is not None:
        body["started_at"] = started_at
    return {"id": event_id, "type": "span", "body": body}


@pytest.mark.parametrize("started_at", ["last", None])
def test_a_span_sent_again_on_a_later_day_is_a_duplicate(
    client: Any, make_key: Any, engine: Engine, started_at: str | None
) -> None:
    key = make_key("ingest")
    # The last instant of yesterday: the first copy's day has a partition, the re-sends
    # come after the job has made further days.
    midnight = datetime.combine(TODAY, datetime.min.time(), tzinfo=UTC)
    start = midnight - timedelta(microseconds=1) if started_at == "last" else None
    start_s = start.isoformat().replace("+00:00", "Z") if start is not None else None
    first = client.post("/api/v1/ingest", json={"events": [_span("a", start_s)]}, headers=auth(key))
    assert first.json()["accepted"] == 1
    if engine.dialect.name == "postgresql":
        maintain_partitions(engine, now=NOW + timedelta(days=1), keep_from=_days_ago(400))
    for event_id in ("a", "b"):  # the same event id, then the same span under a new one
        again = client.post(
            "/api/v1/ingest", json={"events": [_span(event_id, start_s)]}, headers=auth(key)
        ).json()
        assert (again["accepted"], again["duplicates"]) == (0, 1), event_id
    assert _count(engine, Span) == 1
    with engine.connect() as conn:
        assert conn.scalar(select(Span.started_at)) == start


@pg_only
def test_ingest_keeps_answering_while_days_are_dropped(
    client: Any, make_key: Any, engine: Engine
) -> None:
    key = make_key("ingest")
    with engine.connect() as conn:
        pid = conn.scalar(select(Project.id).where(Project.name == "p1"))
    _make_days(engine, 40)
    for n in range(31, 41):
        _rows(engine, pid, f"d{n}", _days_ago(n))
    answers: list[int] = []
    done = threading.Event()

    def ingest() -> None:
        i = 0
        while not done.is_set() or i < 5:
            events = [
                {
                    "id": f"live-{i}-{j}",
                    "type": "span",
                    "body": {
                        "trace_id": f"live-{i}",
                        "span_id": f"s{j}",
                        "started_at": NOW.isoformat().replace("+00:00", "Z"),
                    },
                }
                for j in range(20)
            ]
            r = client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
            answers.append(r.status_code)
            i += 1

    sender = threading.Thread(target=ingest)
    sender.start()
    try:
        while not answers and sender.is_alive():
            done.wait(0.01)
        before = len(answers)
        purge_all(engine, default_days=30, now=NOW)
        during = len(answers) - before
    finally:
        done.set()
        sender.join(timeout=60)
    assert set(answers) == {200}
    assert during >= 1, "no ingest batch was answered while the job ran"
    with engine.connect() as conn:
        assert min(partition_days(conn, "spans")) == (NOW - timedelta(days=30)).date()
    assert _count(engine, Span) == 20 * len(answers)
    assert _count(engine, Trace, Trace.trace_id.like("d%")) == 0


@pg_only
def test_the_scheduled_retention_job_makes_the_days_ahead(engine: Engine, settings: Any) -> None:
    last = TODAY + timedelta(days=3)
    with engine.begin() as conn:
        for table in PARTITIONED:
            if last in partition_days(conn, table):
                conn.execute(text(f"DROP TABLE {table}_p{last:%Y%m%d}"))
    job = next(j for j in periodic_jobs() if j.name == "data_retention")
    assert job.exclusive  # one scheduler process runs it per interval (the lease)

    SchedulerService(settings, engine, make_sessionmaker(engine)).run_periodic(job)

    with engine.connect() as conn:
        for table in PARTITIONED:
            assert last in partition_days(conn, table), table
