"""The data retention job: per project, rows older than its cutoff are deleted in batches.

Deleted, by ``created_at`` (arrival) unless said otherwise: traces with their spans and
span events (by trace id), spans and span events whose trace row never came (by their own
time, else a retention after their trace was first seen without it: :mod:`.orphans`),
scores, embeddings, derived input groups, ingest minutes (by ``minute``), detector runs and
findings (by ``at``), the events of resolved alerts (by ``at``), sent and dead
notifications, evaluations and the per-bucket rollups (:mod:`.rollups`), and last the
ingest event ids. Kept: anything newer than the cutoff, open
(firing or acknowledged) alerts with their events, and the findings and runs they cite.

Event ids go last, in the pass that deleted their data, so an id is never forgotten while
its data remains: an event re-sent after its retention is accepted again (a new row).

On PostgreSQL the heavy tables are partitioned by day (:mod:`.partitions`): first the
days older than every project's cutoff are dropped whole, then the batched deletes below
remove the rest (shorter retentions, traces and the small tables), finding nothing left in
the dropped days.

Each batch is its own short write transaction (``BEGIN IMMEDIATE`` on SQLite), so ingest
waits at most one batch for the lock, never the whole pass. On SQLite the job then pauses
:data:`SQLITE_PAUSE_S`: a waiting writer polls the lock with sleeps of up to 100 ms (its
busy handler), so a job that re-takes the lock at once would starve ingest (seen in the
tests: no batch answered during a pass without the pause). On SQLite the freed pages are
reused by later writes; the file shrinks only with ``auto_vacuum=INCREMENTAL`` (then each
pass ends with ``PRAGMA incremental_vacuum``) or an offline ``VACUUM``.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta
from typing import Any

from prometheus_client import Counter
from sqlalchemy import Engine, and_, delete, exists, or_, select

from app.db import write_transaction
from app.models import (
    Alert,
    AlertEvent,
    DetectorRun,
    Embedding,
    FailureEvent,
    Finding,
    IngestEvent,
    IngestMinute,
    InputGroup,
    Notification,
    Project,
    Score,
    Span,
    SpanEvent,
    Trace,
)
from app.models.base import utcnow
from app.retention.orphans import purge_orphans
from app.retention.partitions import maintain_partitions
from app.retention.rollups import evaluations_expired, purge_rollups
from app.settings import Settings

log = logging.getLogger("telltale.retention")

PURGE_EVERY_SECONDS = 3600.0
BATCH_ROWS = 5000
# A trace brings its spans and span events into the same transaction: fewer traces per
# batch keeps that transaction near BATCH_ROWS rows for agents with tens of steps.
TRACE_BATCH = 500
OPEN_STATES = ("firing", "acknowledged")
SQLITE_PAUSE_S = 0.12

ROWS_DELETED = Counter(
    "telltale_retention_deleted_rows", "Rows the data retention job deleted", ["table"]
)


def purge_expired_data(engine: Engine, _sessionmaker: Any, settings: Settings) -> None:
    """The periodic job (:mod:`app.scheduler.jobs`): one pass over every project."""
    deleted = purge_all(engine, default_days=settings.retention_days)
    if any(deleted.values()):
        log.info("data retention deleted %s", deleted)


def purge_all(
    engine: Engine,
    *,
    default_days: int,
    now: datetime | None = None,
    batch: int = BATCH_ROWS,
    pause_s: float | None = None,
) -> dict[str, int]:
    """Delete every project's expired rows; return the rows deleted per table.

    ``pause_s``: the wait after each batch (None: :data:`SQLITE_PAUSE_S` on SQLite, none
    on PostgreSQL, whose row locks never block an insert of new rows).
    """
    now = now or utcnow()
    if pause_s is None:
        pause_s = SQLITE_PAUSE_S if engine.dialect.name == "sqlite" else 0.0
    with engine.connect() as conn:
        projects = conn.execute(select(Project.id, Project.retention_days)).all()
    longest = max((days or default_days for _pid, days in projects), default=default_days)
    changes = maintain_partitions(engine, now=now, keep_from=now - timedelta(days=longest))
    if changes.dropped:
        log.info("data retention dropped partitions %s", changes.dropped)
    totals: dict[str, int] = {}
    for project_id, days in projects:
        cutoff = now - timedelta(days=days or default_days)
        try:
            counts = purge_project(
                engine, project_id=project_id, cutoff=cutoff, batch=batch, pause_s=pause_s,
                now=now,
            )  # fmt: skip
        except Exception:
            log.exception("data retention of project %s failed; next project", project_id)
            continue
        for table, n in counts.items():
            totals[table] = totals.get(table, 0) + n
    for table, n in totals.items():
        ROWS_DELETED.labels(table=table).inc(n)
    _incremental_vacuum(engine)
    return totals


def purge_project(
    engine: Engine,
    *,
    project_id: int,
    cutoff: datetime,
    batch: int = BATCH_ROWS,
    pause_s: float = 0.0,
    now: datetime | None = None,
) -> dict[str, int]:
    """Delete one project's rows older than ``cutoff``, batch by batch.

    ``now``: when the pass runs (None: the clock's), the time an orphaned trace is first
    seen at (:mod:`.orphans`).
    """
    counts = _purge_traces(
        engine, project_id=project_id, cutoff=cutoff, batch=batch, pause_s=pause_s
    )
    orphans = purge_orphans(
        engine, project_id=project_id, cutoff=cutoff, now=now or utcnow(),
        batch=max(1, min(batch, TRACE_BATCH)), pause_s=pause_s,
    )  # fmt: skip
    for table, n in orphans.items():
        counts[table] += n
    p = project_id
    open_alert = select(Alert.id).where(Alert.project_id == p, Alert.state.in_(OPEN_STATES))
    resolved = select(Alert.id).where(Alert.project_id == p, Alert.state == "resolved")
    plans: list[tuple[str, Any, Any]] = [
        ("scores", Score.id, and_(Score.project_id == p, Score.created_at < cutoff)),
        (
            "embeddings",
            Embedding.id,
            and_(Embedding.project_id == p, Embedding.created_at < cutoff),
        ),
        # The derived input groups (app/derive/groups.py): one row per distinct input.
        (
            "input_groups",
            InputGroup.id,
            and_(InputGroup.project_id == p, InputGroup.created_at < cutoff),
        ),
        (
            "findings",
            Finding.id,
            and_(
                Finding.project_id == p,
                Finding.at < cutoff,
                or_(Finding.alert_id.is_(None), Finding.alert_id.not_in(open_alert)),
            ),
        ),
        (
            # A run some kept finding cites stays with it (the evidence of an open alert).
            "detector_runs",
            DetectorRun.id,
            and_(
                DetectorRun.project_id == p,
                DetectorRun.at < cutoff,
                ~exists().where(Finding.run_id == DetectorRun.id),
            ),
        ),
        (
            "alert_events",
            AlertEvent.id,
            and_(
                AlertEvent.project_id == p,
                AlertEvent.at < cutoff,
                AlertEvent.alert_id.in_(resolved),
            ),
        ),
        (
            "notifications",
            Notification.id,
            and_(
                Notification.project_id == p,
                Notification.created_at < cutoff,
                Notification.status.in_(("sent", "dead")),
            ),
        ),
        evaluations_expired(p, cutoff),
    ]
    for table, key, where in plans:
        counts[table] = _delete_in_batches(engine, key, where, batch=batch, pause_s=pause_s)
    counts.update(purge_rollups(engine, project_id=p, cutoff=cutoff, pause_s=pause_s))
    counts["ingest_minutes"] = _delete_minutes(
        engine, project_id=p, cutoff=cutoff, batch=batch, pause_s=pause_s
    )
    counts["ingest_events"] = _delete_in_batches(
        engine,
        IngestEvent.event_id,
        and_(IngestEvent.project_id == p, IngestEvent.created_at < cutoff),
        batch=batch,
        pause_s=pause_s,
        scope=IngestEvent.project_id == p,
    )
    return counts


def _delete_in_batches(
    engine: Engine, key: Any, where: Any, *, batch: int, pause_s: float, scope: Any = None
) -> int:
    """Delete the rows ``where`` selects, ``batch`` keys per transaction.

    ``scope`` narrows the delete itself when ``key`` is only unique within it (the event id
    within its project).
    """
    table = key.class_
    pick = select(key).where(where).limit(batch)
    if key.key == "id":
        # Ids grow with arrival: walking the primary key from the bottom meets the old rows
        # first. Event ids are client strings, in no time order: there the scan order (about
        # insertion order) finds old rows sooner than sorting by them would.
        pick = pick.order_by(key)
    deleted = 0
    while True:
        with write_transaction(engine) as conn:
            keys = list(conn.scalars(pick))
            if keys:
                stmt = delete(table).where(key.in_(keys))
                if scope is not None:
                    stmt = stmt.where(scope)
                conn.execute(stmt)
        deleted += len(keys)
        if len(keys) < batch:
            return deleted
        time.sleep(pause_s)


def _purge_traces(
    engine: Engine, *, project_id: int, cutoff: datetime, batch: int, pause_s: float
) -> dict[str, int]:
    size = max(1, min(batch, TRACE_BATCH))
    counts = {"traces": 0, "spans": 0, "span_events": 0, "failure_events": 0}
    while True:
        with write_transaction(engine) as conn:
            rows = conn.execute(
                select(Trace.id, Trace.trace_id)
                .where(Trace.project_id == project_id, Trace.created_at < cutoff)
                .order_by(Trace.id)
                .limit(size)
            ).all()
            if rows:
                trace_ids = [r.trace_id for r in rows]
                # A trace's failure events go with it; their issues keep the counts
                # (app/issues: summaries of events no longer stored).
                parts = (
                    ("spans", Span),
                    ("span_events", SpanEvent),
                    ("failure_events", FailureEvent),
                )
                for table, model in parts:
                    result = conn.execute(
                        delete(model).where(
                            model.project_id == project_id, model.trace_id.in_(trace_ids)
                        )
                    )
                    counts[table] += max(result.rowcount, 0)
                conn.execute(delete(Trace).where(Trace.id.in_([r.id for r in rows])))
        counts["traces"] += len(rows)
        if len(rows) < size:
            return counts
        time.sleep(pause_s)


def _delete_minutes(
    engine: Engine, *, project_id: int, cutoff: datetime, batch: int, pause_s: float
) -> int:
    # ingest_minutes has no single-column key; its (project_id, minute, type) primary key
    # makes "the oldest minutes before the cutoff" an index range, deleted minute by minute.
    deleted = 0
    while True:
        with write_transaction(engine) as conn:
            last = conn.scalar(
                select(IngestMinute.minute)
                .where(IngestMinute.project_id == project_id, IngestMinute.minute < cutoff)
                .order_by(IngestMinute.minute)
                .offset(batch - 1)
                .limit(1)
            )
            upto = IngestMinute.minute <= last if last is not None else IngestMinute.minute < cutoff
            result = conn.execute(
                delete(IngestMinute).where(IngestMinute.project_id == project_id, upto)
            )
        deleted += max(result.rowcount, 0)
        if last is None:
            return deleted
        time.sleep(pause_s)


def _incremental_vacuum(engine: Engine) -> None:
    if engine.dialect.name != "sqlite":
        return
    with engine.connect() as conn:
        if conn.exec_driver_sql("PRAGMA auto_vacuum").scalar() == 2:  # 2 = INCREMENTAL
            conn.exec_driver_sql("PRAGMA incremental_vacuum")
