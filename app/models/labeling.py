"""Labeling queues: the queue config, its items (with leases), labels, and rejected labels."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, BigIntPK, JSONType, UTCDateTime, utcnow
from app.models.columns import BigId, Created, ProjectNamed, ProjectOwned


class LabelQueue(ProjectNamed, Created, Base):
    """A named queue: which samples it selects, how they are labeled, how fast it fills."""

    __tablename__ = "label_queues"
    __table_args__ = (UniqueConstraint("project_id", "name"),)

    description: Mapped[str] = mapped_column(Text, default="")
    # {"streams": [...], "agents": [...], "sources": [...]}
    selection: Mapped[dict[str, Any]] = mapped_column(JSONType)
    # {"type": "categorical", "values": [...], "correct_values": [...]}
    # or {"type": "score", "min": a, "max": b}
    label_schema: Mapped[dict[str, Any]] = mapped_column(JSONType)
    # Name of the ``true``/``human`` score written back to trace-linked samples.
    label_name: Mapped[str] = mapped_column(String(128), default="success")
    budget_per_period: Mapped[int] = mapped_column(Integer)
    fill_interval_seconds: Mapped[int] = mapped_column(Integer)
    lease_seconds: Mapped[int] = mapped_column(Integer, default=300)
    reference_size: Mapped[int] = mapped_column(Integer, default=2000)
    last_filled_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class QueueItem(BigId, ProjectOwned, Created, Base):
    """One sample in one queue: pending → leased → labeled | skipped (or back to pending).

    ``(queue_id, sample_key)`` is unique, so a sample is never enqueued twice even when two
    fill jobs race: the loser's insert is a no-op.
    """

    __tablename__ = "queue_items"
    __table_args__ = (
        UniqueConstraint("queue_id", "sample_key"),
        Index("ix_queue_items_queue_status_priority", "queue_id", "status", "priority"),
        Index("ix_queue_items_status_lease", "status", "lease_expires_at"),
    )

    queue_id: Mapped[int] = mapped_column(ForeignKey("label_queues.id", ondelete="CASCADE"))
    sample_key: Mapped[str] = mapped_column(String(200))
    embedding_id: Mapped[int | None] = mapped_column(BigIntPK, nullable=True)
    stream: Mapped[str | None] = mapped_column(String(128), nullable=True)
    trace_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    sample_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    sample_time: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    priority: Mapped[float] = mapped_column(Float)
    novelty: Mapped[float | None] = mapped_column(Float, nullable=True)
    boost: Mapped[float] = mapped_column(Float, default=1.0)
    reason: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(16), default="pending")
    lease_token: Mapped[str | None] = mapped_column(String(64), nullable=True)
    leased_by: Mapped[int | None] = mapped_column(Integer, nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    claims: Mapped[int] = mapped_column(Integer, default=0)
    done_by: Mapped[int | None] = mapped_column(Integer, nullable=True)
    done_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class Label(BigId, ProjectOwned, Created, Base):
    """A label given by an annotator; ``score_synced`` once written back as a score."""

    __tablename__ = "labels"
    __table_args__ = (
        Index("ix_labels_queue_created", "queue_id", "created_at"),
        Index("ix_labels_project_trace", "project_id", "trace_id"),
    )

    queue_id: Mapped[int] = mapped_column(ForeignKey("label_queues.id", ondelete="CASCADE"))
    queue_item_id: Mapped[int] = mapped_column(
        ForeignKey("queue_items.id", ondelete="CASCADE"), unique=True
    )
    sample_key: Mapped[str] = mapped_column(String(200))
    trace_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    value: Mapped[Any] = mapped_column(JSONType)
    score_value: Mapped[float | None] = mapped_column(Float, nullable=True)
    score_synced: Mapped[bool] = mapped_column(Boolean, default=False)
    annotator_key_id: Mapped[int] = mapped_column(Integer)
    comment: Mapped[str | None] = mapped_column(Text, nullable=True)


class RejectedLabel(BigId, ProjectOwned, Created, Base):
    """A label that arrived on a stale or foreign lease: kept so the UI can resubmit it."""

    __tablename__ = "rejected_labels"
    __table_args__ = (Index("ix_rejected_labels_project_created", "project_id", "created_at"),)

    queue_item_id: Mapped[int] = mapped_column(ForeignKey("queue_items.id", ondelete="CASCADE"))
    lease_token: Mapped[str] = mapped_column(String(64))
    value: Mapped[Any] = mapped_column(JSONType)
    comment: Mapped[str | None] = mapped_column(Text, nullable=True)
    annotator_key_id: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(String(32))
