"""The data retention job: old rows go, new rows and an open alert's evidence stay, per
project; ingest keeps succeeding while it runs."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, func, select, update

from app import metrics
from app.db import as_utc, make_sessionmaker, write_session
from app.models import (
    Alert,
    AlertEvent,
    Channel,
    DetectorRun,
    Embedding,
    Finding,
    IngestEvent,
    IngestMinute,
    Notification,
    Project,
    Score,
    Span,
    SpanEvent,
    Trace,
)
from app.models.base import utcnow
from app.retention.purge import purge_all
from app.scheduler.jobs import periodic_jobs
from app.scheduler.service import SchedulerService
from app.settings import Settings
from tests.app.engine_helpers import add_monitor, setup_project
from tests.conftest import auth

NOW = utcnow()
OLD = NOW - timedelta(days=40)
RECENT = NOW - timedelta(days=1)

DATA = (Trace, Span, SpanEvent, Score, Embedding, IngestEvent, IngestMinute)


def _count(engine: Engine, model: Any, *where: Any) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(select(func.count()).select_from(model).where(*where)) or 0)


def _ingested(engine: Engine, pid: int, trace_id: str, at: datetime) -> None:
    """A trace with two spans, a span event, a score, an embedding and their event ids."""
    with write_session(engine) as s:
        s.add(Trace(project_id=pid, trace_id=trace_id, created_at=at, started_at=at))
        for i in range(2):
            s.add(Span(project_id=pid, trace_id=trace_id, span_id=f"s{i}", started_at=at))
        s.add(SpanEvent(project_id=pid, trace_id=trace_id, span_id="s0", name="gen_ai.choice"))
        s.add(Score(project_id=pid, trace_id=trace_id, name="ok", value=1.0, created_at=at))
        s.add(
            Embedding(
                project_id=pid, stream="out", dim=1, vector=b"\0\0\0\0", trace_id=trace_id,
                created_at=at,
            )
        )  # fmt: skip
        s.add(IngestEvent(project_id=pid, event_id=f"ev-{trace_id}", type="trace", created_at=at))
        minute = at.replace(second=0, microsecond=0)
        s.add(IngestMinute(project_id=pid, minute=minute, type="trace", events=1))


def _run(engine: Engine, pid: int, monitor: int, at: datetime, alert: int | None) -> int:
    with write_session(engine) as s:
        run = DetectorRun(
            project_id=pid, monitor_id=monitor, failure_mode="FM-2", at=at, window_start=at,
            window_end=at, status="ok", fired=alert is not None,
        )  # fmt: skip
        s.add(run)
        s.flush()
        if alert is not None:
            s.add(
                Finding(
                    project_id=pid, monitor_id=monitor, run_id=run.id, alert_id=alert,
                    failure_mode="FM-2", severity="warning", at=at,
                )
            )  # fmt: skip
        return run.id


def _alert(engine: Engine, pid: int, monitor: int, state: str, channel: int) -> int:
    with write_session(engine) as s:
        alert = Alert(
            project_id=pid, monitor_id=monitor, fingerprint=f"fp-{state}", failure_mode="FM-2",
            severity="warning", state=state, first_fired_at=OLD, last_fired_at=OLD,
        )  # fmt: skip
        s.add(alert)
        s.flush()
        s.add(AlertEvent(project_id=pid, alert_id=alert.id, kind="fired", actor="system", at=OLD))
        for status in ("sent", "dead", "pending"):
            s.add(
                Notification(
                    project_id=pid, channel_id=channel, alert_id=alert.id, event="trigger",
                    payload={}, status=status, next_attempt_at=OLD, due_at=OLD, created_at=OLD,
                )
            )  # fmt: skip
        return alert.id


def _channel(engine: Engine, pid: int) -> int:
    with write_session(engine) as s:
        channel = Channel(project_id=pid, name="hook", type="webhook", url="http://127.0.0.1/")
        s.add(channel)
        s.flush()
        return channel.id


def test_old_rows_go_and_new_rows_and_open_evidence_stay(engine: Engine) -> None:
    pid = setup_project(engine)
    monitor = add_monitor(engine, pid, "FM-2")
    channel = _channel(engine, pid)
    _ingested(engine, pid, "old", OLD)
    _ingested(engine, pid, "new", RECENT)
    firing = _alert(engine, pid, monitor, "firing", channel)
    resolved = _alert(engine, pid, monitor, "resolved", channel)
    evidence = _run(engine, pid, monitor, OLD, firing)
    _run(engine, pid, monitor, OLD, resolved)
    _run(engine, pid, monitor, OLD, None)
    fresh = _run(engine, pid, monitor, RECENT, None)

    deleted = purge_all(engine, default_days=30, now=NOW, batch=2)

    assert deleted["traces"] == 1 and deleted["spans"] == 2 and deleted["span_events"] == 1
    for model in DATA:
        assert _count(engine, model) == (2 if model is Span else 1), model.__tablename__
    assert _count(engine, Trace, Trace.trace_id == "old") == 0
    assert _count(engine, IngestEvent, IngestEvent.event_id == "ev-old") == 0
    with engine.connect() as conn:
        assert set(conn.scalars(select(DetectorRun.id))) == {evidence, fresh}
        assert set(conn.scalars(select(Finding.alert_id))) == {firing}
        assert set(conn.scalars(select(AlertEvent.alert_id))) == {firing}
        kept = conn.execute(select(Notification.alert_id, Notification.status)).all()
    assert sorted(kept) == sorted([(firing, "pending"), (resolved, "pending")])
    assert _count(engine, Alert) == 2  # the alerts themselves are not retention's to delete


def test_a_project_override_keeps_or_drops_more(engine: Engine) -> None:
    long_kept = setup_project(engine, "archive")
    short_kept = setup_project(engine, "scratch")
    with write_session(engine) as s:
        s.execute(update(Project).where(Project.id == long_kept).values(retention_days=90))
        s.execute(update(Project).where(Project.id == short_kept).values(retention_days=1))
    for pid in (long_kept, short_kept):
        _ingested(engine, pid, "old", OLD)
        _ingested(engine, pid, "two-days", NOW - timedelta(days=2))

    purge_all(engine, default_days=30, now=NOW)

    assert _count(engine, Trace, Trace.project_id == long_kept) == 2
    assert _count(engine, Trace, Trace.project_id == short_kept) == 0
    assert _count(engine, IngestEvent, IngestEvent.project_id == short_kept) == 0


def test_the_scheduler_runs_it_with_the_settings_default(engine: Engine, settings: Settings):
    pid = setup_project(engine)
    _ingested(engine, pid, "old", OLD)
    _ingested(engine, pid, "new", RECENT)
    job = next(j for j in periodic_jobs() if j.name == "data_retention")
    assert job.exclusive  # once per interval across replicas, by the scheduler's lease
    service = SchedulerService(settings, engine, make_sessionmaker(engine))

    service.run_periodic(job)

    assert _count(engine, Trace) == 1
    last = metrics.SCHEDULER_JOB_LAST_RUN.labels(job="data_retention")._value.get()
    assert last > 0


def test_ingest_keeps_succeeding_while_the_job_runs(client: Any, make_key: Any, engine: Engine):
    key = make_key("ingest")
    with engine.connect() as conn:
        pid = conn.scalar(select(Project.id).where(Project.name == "p1"))
    with write_session(engine) as s:
        s.add_all(Trace(project_id=pid, trace_id=f"old-{i}", created_at=OLD) for i in range(3000))
        s.add_all(
            Score(project_id=pid, trace_id=f"old-{i}", name="ok", value=1.0, created_at=OLD)
            for i in range(3000)
        )
    answers: list[int] = []
    done = threading.Event()

    def ingest() -> None:
        i = 0
        while not done.is_set() or i < 5:
            event = {"id": f"live-{i}", "type": "trace", "body": {"trace_id": f"live-{i}"}}
            r = client.post("/api/v1/ingest", json={"events": [event]}, headers=auth(key))
            answers.append(r.status_code)
            i += 1

    sender = threading.Thread(target=ingest)
    sender.start()
    try:
        while not answers and sender.is_alive():  # the sender is writing before the job starts
            done.wait(0.01)
        before = len(answers)
        deleted = purge_all(engine, default_days=30, now=NOW, batch=500)
        during = len(answers) - before
    finally:
        done.set()
        sender.join(timeout=60)
    assert deleted["traces"] == 3000 and deleted["scores"] == 3000
    assert during >= 1, "no ingest batch was answered while the job ran"
    assert set(answers) == {200}
    assert _count(engine, Trace) == len(answers)


def test_an_event_resent_after_its_retention_is_accepted_again(
    client: Any, make_key: Any, engine: Engine
) -> None:
    key = make_key("ingest")
    batch = {"events": [{"id": "ev-1", "type": "trace", "body": {"trace_id": "t-1"}}]}
    assert client.post("/api/v1/ingest", json=batch, headers=auth(key)).json()["accepted"] == 1
    assert client.post("/api/v1/ingest", json=batch, headers=auth(key)).json()["duplicates"] == 1
    with write_session(engine) as s:
        s.execute(update(Trace).values(created_at=OLD))
        s.execute(update(IngestEvent).values(created_at=OLD))

    purge_all(engine, default_days=30, now=NOW)

    again = client.post("/api/v1/ingest", json=batch, headers=auth(key)).json()
    assert again["accepted"] == 1 and again["duplicates"] == 0
    assert _count(engine, Trace) == 1


def test_client_dated_rows_cannot_outlive_arrival_plus_retention(
    client: Any, make_key: Any, engine: Engine
) -> None:
    # A score and an embedding dated 9999-12-30 survived a 1-day retention 40 days on while
    # their event ids were purged. Dates past MAX_FUTURE are refused by name; dates within
    # it (clock skew) are stored as the arrival time, which retention judges.
    key = make_key("ingest")
    arrival = utcnow()
    ahead = (arrival + timedelta(hours=12)).isoformat()
    far = "9999-12-30T00:00:00Z"
    score = {"trace_id": "t", "name": "ok", "value": 1}
    emb = {"stream": "s", "vector": [1, 2, 3]}
    events = [
        {"id": "s-far", "type": "score", "body": {**score, "created_at": far}},
        {"id": "e-far", "type": "embedding", "body": {**emb, "created_at": far}},
        {"id": "s-ahead", "type": "score", "body": {**score, "created_at": ahead}},
        {"id": "e-ahead", "type": "embedding", "body": {**emb, "created_at": ahead}},
    ]
    r = client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
    assert r.status_code == 200 and r.json()["accepted"] == 2, r.text
    errors = [x["error"] for x in r.json()["rejected"]]
    assert errors[0].startswith("events[0].body.created_at: is more than 1 day in the future")
    assert errors[1].startswith("events[1].body.created_at:")
    only_far = {"events": events[:1]}
    r = client.post("/api/v1/ingest", json=only_far, headers=auth(key))
    assert r.status_code == 422 and "created_at" in r.text
    feedback = {"scores": [{**score, "created_at": far}]}
    r = client.post("/api/v1/scores", json=feedback, headers=auth(key))
    assert "scores[0].created_at" in r.text
    with engine.connect() as conn:
        stored = conn.execute(select(Score.created_at)).scalars().all()
        stored += conn.execute(select(Embedding.created_at)).scalars().all()
    assert len(stored) == 2 and all(as_utc(t) <= utcnow() for t in stored)

    purge_all(engine, default_days=1, now=arrival + timedelta(days=1, hours=1))

    assert _count(engine, Score) == _count(engine, Embedding) == _count(engine, IngestEvent) == 0


def test_rollups_and_evaluations_expire_with_their_traces(engine: Engine) -> None:
    """Rollups of buckets wholly before the cutoff go (their traces went), with their dirty
    marks; evaluations queued before it go; the newer ones of both stay."""
    from app.models import Evaluation, Evaluator, RollupDirty, ToolRollup, TraceRollup
    from app.models.rollups import bucket_of

    pid = setup_project(engine)
    cutoff = NOW - timedelta(days=30)
    old_b, new_b = bucket_of(OLD), bucket_of(RECENT)
    with write_session(engine) as s:
        for b in (old_b, old_b + 300, new_b):
            dims = {"project_id": pid, "bucket": b, "agent": "a", "agent_version": "v",
                    "environment": ""}  # fmt: skip
            s.add(TraceRollup(**dims, traces=3))
            s.add(ToolRollup(**dims, tool="search", calls=2))
            s.add(RollupDirty(project_id=pid, bucket=b, marked_at=NOW))
        ev = Evaluator(project_id=pid, name="j", kind="check", score_name="j", config={},
                       selection={}, watch_from=OLD)  # fmt: skip
        s.add(ev)
        s.flush()
        for tid, at in (("old", OLD), ("new", RECENT)):
            s.add(Evaluation(project_id=pid, evaluator_id=ev.id, version=1, trace_id=tid,
                             due_at=at, created_at=at))  # fmt: skip

    deleted = purge_all(engine, default_days=30, now=NOW)

    assert deleted["trace_rollups"] == 2 and deleted["tool_rollups"] == 2
    assert deleted["rollup_dirty"] == 2 and deleted["evaluations"] == 1
    for model in (TraceRollup, ToolRollup, RollupDirty):
        with engine.connect() as conn:
            assert list(conn.scalars(select(model.bucket))) == [new_b], model.__tablename__
    with engine.connect() as conn:
        assert list(conn.scalars(select(Evaluation.trace_id))) == ["new"]
    assert bucket_of(cutoff) > old_b + 300
