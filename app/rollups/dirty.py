"""Which (project, bucket) rollups are stale: marked where raw rows change, cleared once rebuilt.

Marked in the transactions that change what a bucket counts, so a change is never lost
between its commit and the mark:

* the derive job's write (:mod:`app.derive.job`): a trace's spans and events settle there,
  and a trace that grows is derived (and marked) again;
* an ingest batch that stores scores (:mod:`app.ingest.store`): a score counts for the
  bucket of the trace it scores, which may be days old (a delayed label);
* :func:`mark_range` (the backfill), for history the job never saw.

A mark is an upsert that moves ``marked_at`` forward. The rollup job reads marks, rebuilds
their buckets, then deletes each mark only where ``marked_at`` is still what it read
(:func:`clear`): a change committed meanwhile moved it, so the bucket stays dirty. On
PostgreSQL the delete waits for a marking transaction still open on that row and then
re-checks it (READ COMMITTED re-evaluates the updated row), so an in-flight change cannot
slip between the rebuild's read and the delete either.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, and_, delete, or_, select

from app.db import dialect_insert, one_of
from app.models import RollupDirty, Trace
from app.models.base import utcnow
from app.rollups.buckets import bucket_of


@dataclass(frozen=True)
class Mark:
    project_id: int
    bucket: int
    marked_at: datetime


def mark(conn: Connection, *, project_id: int, buckets: Iterable[int]) -> None:
    """Mark ``buckets`` of ``project_id`` dirty (now)."""
    rows = [{"project_id": project_id, "bucket": b, "marked_at": utcnow()} for b in sorted(set(buckets))]
    if not rows:
        return
    stmt = dialect_insert(conn.dialect.name, RollupDirty)
    conn.execute(
        stmt.on_conflict_do_update(
            index_elements=["project_id", "bucket"], set_={"marked_at": stmt.excluded.marked_at}
        ),
        rows,
    )


def mark_started(conn: Connection, traces: Iterable[tuple[int, datetime | None]]) -> None:
    """Mark the buckets of ``(project_id, started_at)`` pairs (traces without a start have
    none and are counted in no bucket)."""
    by_project: dict[int, set[int]] = {}
    for project_id, started in traces:
        if started is not None:
            by_project.setdefault(project_id, set()).add(bucket_of(started))
    for project_id, buckets in sorted(by_project.items()):
        mark(conn, project_id=project_id, buckets=buckets)


def mark_scored(conn: Connection, *, project_id: int, trace_ids: Collection[str]) -> None:
    """Mark the buckets of the stored traces that just got scores (a score of a trace not
    stored yet counts once the trace is derived, which marks it then)."""
    if not trace_ids:
        return
    found = conn.execute(
        select(Trace.started_at).where(
            Trace.project_id == project_id,
            one_of(Trace.trace_id, sorted(trace_ids), conn.dialect.name),
            Trace.started_at.is_not(None),
        )
    ).scalars()
    mark(conn, project_id=project_id, buckets={bucket_of(t) for t in found})


def oldest(conn: Connection, *, limit: int) -> list[Mark]:
    """Up to ``limit`` marks, the oldest buckets first (history catches up in order)."""
    rows = conn.execute(
        select(RollupDirty.project_id, RollupDirty.bucket, RollupDirty.marked_at)
        .order_by(RollupDirty.bucket, RollupDirty.project_id)
        .limit(limit)
    ).all()
    return [Mark(*r) for r in rows]


def clear(conn: Connection, marks: Collection[Mark]) -> None:
    """Delete the marks not moved since they were read."""
    if not marks:
        return
    conn.execute(
        delete(RollupDirty).where(
            or_(
                *(
                    and_(
                        RollupDirty.project_id == m.project_id,
                        RollupDirty.bucket == m.bucket,
                        RollupDirty.marked_at == m.marked_at,
                    )
                    for m in marks
                )
            )
        )
    )


def pending(conn: Connection) -> int:
    """Dirty buckets waiting (for the job's log and metric)."""
    return len(conn.execute(select(RollupDirty.bucket).limit(100_000)).all())
