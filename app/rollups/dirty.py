"""Which (project, bucket) rollups are stale: marked where raw rows change, cleared once rebuilt.

Marked in the transactions that change what a bucket counts, so a change is never lost
between its commit and the mark:

* the derive job's write (:mod:`app.derive.job`): a trace's spans and events settle there,
  and a trace that grows is derived (and marked) again;
* an ingest batch that stores scores (:mod:`app.ingest.store`): a score counts for the
  bucket of the trace it scores, which may be days old (a delayed label);
* :func:`mark_range` (the backfill), for history the job never saw.

A mark is an upsert that moves ``marked_at`` forward; the marking functions live with the
table (:mod:`app.models.rollups`), so ingest and derive need not import this wing. The rollup job reads marks, rebuilds
their buckets, then deletes each mark only where ``marked_at`` is still what it read
(:func:`clear`): a change committed meanwhile moved it, so the bucket stays dirty. On
PostgreSQL the delete waits for a marking transaction still open on that row and then
re-checks it (READ COMMITTED re-evaluates the updated row), so an in-flight change cannot
slip between the rebuild's read and the delete either.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, and_, delete, func, or_, select

from app.models import RollupDirty
from app.models.rollups import mark_dirty, mark_scored, mark_started

__all__ = ["Mark", "clear", "mark", "mark_scored", "mark_started", "oldest", "pending"]


@dataclass(frozen=True)
class Mark:
    project_id: int
    bucket: int
    marked_at: datetime


mark = mark_dirty


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
    return int(conn.scalar(select(func.count()).select_from(RollupDirty)) or 0)
