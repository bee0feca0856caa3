"""Media jobs: an uploaded image or text waiting to be embedded by an embed worker."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, UTCDateTime, utcnow
from app.models.columns import BigId, Created, ProjectOwned

JOB_STATUSES = ("pending", "running", "done", "failed", "dead")


class MediaJob(BigId, ProjectOwned, Created, Base):
    """One sample to embed: pending → running → done | failed (bad input) | dead (retries spent).

    ``(project_id, stream, sample_id)`` is unique, so a re-upload finds the existing job.
    A running job holds a lease (``lease_token`` until ``lease_expires_at``); a worker that
    dies leaves the lease to expire and the job is claimable again.
    """

    __tablename__ = "media_jobs"
    __table_args__ = (
        UniqueConstraint("project_id", "stream", "sample_id"),
        Index("ix_media_jobs_status_next", "status", "next_attempt_at"),
        Index("ix_media_jobs_created", "created_at"),
    )

    stream: Mapped[str] = mapped_column(String(128))
    sample_id: Mapped[str] = mapped_column(String(128))
    trace_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    kind: Mapped[str] = mapped_column(String(8))  # image | text
    # Images: a server-generated file name under settings.media_dir, never a client path.
    file_name: Mapped[str | None] = mapped_column(String(64), nullable=True)
    content_type: Mapped[str | None] = mapped_column(String(32), nullable=True)
    size_bytes: Mapped[int | None] = mapped_column(Integer, nullable=True)
    width: Mapped[int | None] = mapped_column(Integer, nullable=True)
    height: Mapped[int | None] = mapped_column(Integer, nullable=True)
    text: Mapped[str | None] = mapped_column(Text, nullable=True)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    lease_token: Mapped[str | None] = mapped_column(String(64), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    model: Mapped[str | None] = mapped_column(String(128), nullable=True)
    embedding_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
