"""Per-bucket rollups of a project's traffic, and the buckets waiting to be recomputed.

A bucket is :data:`BUCKET_SECONDS` of trace start times, stored as the epoch second it
starts at (an integer: the same arithmetic on both databases). Each table
is keyed by the project, the bucket and a few low-cardinality dimensions; its counts are
sums a query adds over any set of buckets and dimension values, and its latency sketch
merges the same way (:mod:`detectors.rules.sketch`). What each table holds and how it is
kept: :mod:`app.rollups`.

The rollups go with their project (a foreign key, ``ON DELETE CASCADE``); the dirty table
has none, like the ingest tables (migration 0016): it is written in ingest transactions,
and a mark left by a deleted project is recomputed to nothing and dropped.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Connection,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    select,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.db import as_utc, dialect_insert, one_of
from app.models.base import Base, UTCDateTime, utcnow
from app.models.core import Trace
from detectors.rules.spec import BUCKET_SECONDS


class RollupDirty(Base):
    """A (project, bucket) whose raw rows changed since its rollups were computed.

    ``marked_at`` moves forward with every mark; the rollup job deletes a mark only if it is
    still the one it read, so a change that lands while a bucket is being recomputed leaves
    it dirty for the next pass (:mod:`app.rollups.dirty`).
    """

    __tablename__ = "rollup_dirty"

    project_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    bucket: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    marked_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class _Dimensions:
    """The key every trace-keyed rollup shares: project, bucket, agent, version, environment."""

    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True, sort_order=-10
    )
    bucket: Mapped[int] = mapped_column(BigInteger, primary_key=True, sort_order=-9)
    agent: Mapped[str] = mapped_column(String(128), primary_key=True, sort_order=-8)
    agent_version: Mapped[str] = mapped_column(String(64), primary_key=True, sort_order=-7)
    environment: Mapped[str] = mapped_column(String(64), primary_key=True, sort_order=-6)


class TraceRollup(_Dimensions, Base):
    """Traces started in the bucket: counts, latency sketch, tokens and cost."""

    __tablename__ = "trace_rollups"

    traces: Mapped[int] = mapped_column(Integer, default=0)
    error_traces: Mapped[int] = mapped_column(Integer, default=0)
    # Traces with a tool loop, as derived (traces.loop_tool: app/derive/loops.py).
    loop_traces: Mapped[int] = mapped_column(Integer, default=0)
    # Traces with a label: a score the project's roles read as ground truth.
    labeled_traces: Mapped[int] = mapped_column(Integer, default=0)
    latency_sketch: Mapped[bytes] = mapped_column(LargeBinary, default=b"")
    tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    tokens_sq: Mapped[float] = mapped_column(Float, default=0.0)
    cost: Mapped[float] = mapped_column(Float, default=0.0)
    cost_sq: Mapped[float] = mapped_column(Float, default=0.0)


class ToolRollup(_Dimensions, Base):
    """Tool calls (tool and retrieval steps) started in traces of the bucket, per tool."""

    __tablename__ = "tool_rollups"

    tool: Mapped[str] = mapped_column(String(128), primary_key=True)
    calls: Mapped[int] = mapped_column(Integer, default=0)
    errors: Mapped[int] = mapped_column(Integer, default=0)
    latency_sketch: Mapped[bytes] = mapped_column(LargeBinary, default=b"")


class ModelRollup(_Dimensions, Base):
    """Model calls (LLM steps) of traces of the bucket, per model: tokens and cost."""

    __tablename__ = "model_rollups"

    model: Mapped[str] = mapped_column(String(128), primary_key=True)
    calls: Mapped[int] = mapped_column(Integer, default=0)
    errors: Mapped[int] = mapped_column(Integer, default=0)
    # Calls without a cost (none sent, none computed: app/pricing/coverage.py).
    unpriced_calls: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    tokens_sq: Mapped[float] = mapped_column(Float, default=0.0)
    cost: Mapped[float] = mapped_column(Float, default=0.0)
    cost_sq: Mapped[float] = mapped_column(Float, default=0.0)


class ScoreRollup(_Dimensions, Base):
    """Scores of traces of the bucket, per score name (a delayed label counts for the
    bucket of the trace it labels)."""

    __tablename__ = "score_rollups"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    scores: Mapped[int] = mapped_column(Integer, default=0)
    total: Mapped[float] = mapped_column(Float, default=0.0)
    total_sq: Mapped[float] = mapped_column(Float, default=0.0)
    passed: Mapped[int] = mapped_column(Integer, default=0)


class UserRollup(Base):
    """Traces of the bucket per user (``traces.user_id``): a dimension too wide to key the
    others by."""

    __tablename__ = "user_rollups"
    __table_args__ = (
        Index("ix_user_rollups_project_user_bucket", "project_id", "user_id", "bucket"),
    )

    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    )
    bucket: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    traces: Mapped[int] = mapped_column(Integer, default=0)
    error_traces: Mapped[int] = mapped_column(Integer, default=0)
    tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    tokens_sq: Mapped[float] = mapped_column(Float, default=0.0)
    cost: Mapped[float] = mapped_column(Float, default=0.0)
    cost_sq: Mapped[float] = mapped_column(Float, default=0.0)


def bucket_of(t: datetime) -> int:
    """The bucket holding time ``t`` (naive: UTC), as the epoch second it starts at.

    >>> from datetime import UTC
    >>> bucket_of(datetime(2026, 12, 1, 10, 7, 30, tzinfo=UTC)) % 86400 // 60
    605
    """
    return int(as_utc(t).timestamp() // BUCKET_SECONDS) * BUCKET_SECONDS


# The marks, next to their table: written by the transactions that change what a bucket
# counts (ingest, derive), which must not depend on the rollup wing (app/rollups/dirty.py).


def mark_dirty(conn: Connection, *, project_id: int, buckets: Iterable[int]) -> None:
    """Mark ``buckets`` of ``project_id`` dirty (now): an upsert that moves ``marked_at``."""
    rows = [{"project_id": project_id, "bucket": b, "marked_at": utcnow()}
            for b in sorted(set(buckets))]  # fmt: skip
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
    """Mark the buckets of ``(project_id, started_at)`` pairs (a trace without a start is in
    no bucket)."""
    by_project: dict[int, set[int]] = {}
    for project_id, started in traces:
        if started is not None:
            by_project.setdefault(project_id, set()).add(bucket_of(started))
    for project_id, buckets in sorted(by_project.items()):
        mark_dirty(conn, project_id=project_id, buckets=buckets)


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
    mark_dirty(conn, project_id=project_id, buckets={bucket_of(t) for t in found if t})
