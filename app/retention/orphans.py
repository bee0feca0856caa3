"""Orphans: spans and span events whose trace row never arrived, deleted once expired.

Retention deletes a trace's spans and span events with its trace row, by the row's arrival
(:mod:`.purge`). The native API takes a trace's pieces in any order, so spans may come
before their trace event, and a client may never send it; such rows had nothing to expire
with and stayed for good (a probe left 50 of 50 on both databases; on PostgreSQL the ones
without a start sit in the DEFAULT partition, which no partition drop reaches). Nothing
else makes orphans: the OTLP receiver writes a trace row with its spans, and nothing
deletes a trace row without its spans.

An orphan row goes when, against its project's cutoff,

- its own time (a span's ``started_at``, an event's ``time``) is before the cutoff: the
  time its PostgreSQL partition is dropped by, so both databases keep the same rows; or
- its trace was first seen orphaned before the cutoff (:class:`~app.models.OrphanTrace`):
  for rows with no time, or dated past the days made ahead (:func:`.partitions.made_until`),
  which their own time would never, or only in years, expire. Rows of that trace that came
  after the sighting go with it: a trace whose row has not come in a whole retention is
  taken as abandoned.

Young orphans stay, since their trace row may still come (an agent may send its trace
event when a long run ends); when it comes, the spans stay with it and the sighting is
forgotten.

Found by one walk per pass over the project's orphaned trace ids (keyset on the trace id,
no rescans), read outside the write lock; each batch of :data:`~.purge.TRACE_BATCH` traces
is deleted in its own short write transaction. On PostgreSQL the walk's time condition
prunes it to the days before the cutoff and DEFAULT; on SQLite it reads the project's span
index and rows (there is no time index: one would cost every span insert to save an hourly
read).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, and_, delete, exists, or_, select
from sqlalchemy.engine import Connection

from app.db import dialect_insert, write_transaction
from app.models import OrphanTrace, Span, SpanEvent, Trace
from app.retention.partitions import made_until

# The tables whose rows expire with their trace row, and each one's own time.
TRACE_PIECES: tuple[tuple[Any, Any], ...] = ((Span, Span.started_at), (SpanEvent, SpanEvent.time))


def purge_orphans(
    engine: Engine,
    *,
    project_id: int,
    cutoff: datetime,
    now: datetime,
    batch: int,
    pause_s: float,
) -> dict[str, int]:
    """Delete the project's expired orphan rows; return how many per table."""
    far = made_until(now)
    counts = {}
    for model, own_time in TRACE_PIECES:
        counts[model.__tablename__] = _purge_table(
            engine, model, own_time, project_id=project_id, cutoff=cutoff, now=now, far=far,
            batch=batch, pause_s=pause_s,
        )  # fmt: skip
    _forget_sightings(engine, project_id=project_id, batch=batch, pause_s=pause_s)
    return counts


def _no_trace_row(model: Any) -> Any:
    return ~exists().where(Trace.project_id == model.project_id, Trace.trace_id == model.trace_id)


def _purge_table(
    engine: Engine, model: Any, own_time: Any, *, project_id: int, cutoff: datetime,
    now: datetime, far: datetime, batch: int, pause_s: float,
) -> int:  # fmt: skip
    # Rows dated within [cutoff, far) wait for their own time and need no sighting.
    candidates = or_(own_time < cutoff, own_time.is_(None), own_time >= far)
    pick = (
        select(model.trace_id)
        .distinct()
        .where(model.project_id == project_id, candidates, _no_trace_row(model))
        .order_by(model.trace_id)
        .limit(batch)
    )
    deleted, after = 0, ""
    while True:
        with engine.connect() as conn:
            trace_ids = list(conn.scalars(pick.where(model.trace_id > after)))
        if not trace_ids:
            return deleted
        with write_transaction(engine) as conn:
            abandoned = _sight(conn, project_id=project_id, trace_ids=trace_ids, now=now,
                               cutoff=cutoff)  # fmt: skip
            expired = own_time < cutoff
            if abandoned:
                expired = or_(expired, model.trace_id.in_(abandoned))
            result = conn.execute(
                delete(model).where(
                    model.project_id == project_id,
                    model.trace_id.in_(trace_ids),
                    _no_trace_row(model),  # again, under the lock: the row may have come
                    expired,
                )
            )
        deleted += max(result.rowcount, 0)
        if len(trace_ids) < batch:
            return deleted
        after = trace_ids[-1]
        time.sleep(pause_s)


def _sight(
    conn: Connection, *, project_id: int, trace_ids: list[str], now: datetime, cutoff: datetime
) -> list[str]:
    """Record the traces first seen orphaned now; return those first seen before ``cutoff``."""
    conn.execute(
        dialect_insert(conn.dialect.name, OrphanTrace).on_conflict_do_nothing(),
        [{"project_id": project_id, "trace_id": t, "first_seen_at": now} for t in trace_ids],
    )
    return list(
        conn.scalars(
            select(OrphanTrace.trace_id).where(
                OrphanTrace.project_id == project_id,
                OrphanTrace.trace_id.in_(trace_ids),
                OrphanTrace.first_seen_at < cutoff,
            )
        )
    )


def _forget_sightings(engine: Engine, *, project_id: int, batch: int, pause_s: float) -> None:
    """Drop the sightings of traces whose row has come or whose rows are all gone."""
    o = OrphanTrace
    settled = or_(
        exists().where(Trace.project_id == o.project_id, Trace.trace_id == o.trace_id),
        and_(
            ~exists().where(Span.project_id == o.project_id, Span.trace_id == o.trace_id),
            ~exists().where(SpanEvent.project_id == o.project_id, SpanEvent.trace_id == o.trace_id),
        ),
    )
    pick = select(o.trace_id).where(o.project_id == project_id).order_by(o.trace_id).limit(batch)
    after = ""
    while True:
        with engine.connect() as conn:
            trace_ids = list(conn.scalars(pick.where(o.trace_id > after)))
        if not trace_ids:
            return
        with write_transaction(engine) as conn:
            conn.execute(
                delete(o).where(o.project_id == project_id, o.trace_id.in_(trace_ids), settled)
            )
        if len(trace_ids) < batch:
            return
        after = trace_ids[-1]
        time.sleep(pause_s)
