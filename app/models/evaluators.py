"""Online evaluators, their work queue and their daily use (issue #51).

An evaluator scores traces: an LLM judge behind any OpenAI-compatible endpoint, or a
deterministic check. Editing what it computes makes a new ``version``; each (evaluator,
version, trace) is evaluated at most once (the unique key of ``evaluations``), and the
score it writes is an ordinary row of ``scores`` written in the same transaction that
marks the evaluation done (:mod:`app.evaluators.queue`).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Date,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, JSONType, UTCDateTime
from app.models.columns import BigId, Created, ProjectNamed


class Evaluator(ProjectNamed, Created, Base):
    __tablename__ = "evaluators"
    __table_args__ = (UniqueConstraint("project_id", "name"),)

    kind: Mapped[str] = mapped_column(String(16))  # llm_judge | check
    # The score it writes, and the `true` objective its score predicts (None: none).
    score_name: Mapped[str] = mapped_column(String(128))
    objective: Mapped[str | None] = mapped_column(String(128), nullable=True)
    # What it computes (app/evaluators/spec.py): the check and its arguments, or the judge's
    # endpoint, model, prompt and answer format. A change makes a new version.
    config: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    version: Mapped[int] = mapped_column(Integer, default=1)
    # The judge endpoint's key; kept in clear (the caller needs it), never shown back.
    api_key: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Which traces: agents, versions, sources, environments ([] = any); sampled by trace id.
    selection: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    sample_rate: Mapped[float] = mapped_column(Float, default=1.0)
    delay_seconds: Mapped[int] = mapped_column(Integer, default=60)
    daily_calls: Mapped[int] = mapped_column(Integer, default=10_000)
    daily_tokens: Mapped[int] = mapped_column(BigInteger, default=10_000_000)
    concurrency: Mapped[int] = mapped_column(Integer, default=8)
    timeout_seconds: Mapped[float] = mapped_column(Float, default=30.0)
    max_retries: Mapped[int] = mapped_column(Integer, default=2)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    # The circuit breaker: consecutive failed calls, and the pause they caused.
    failures_in_row: Mapped[int] = mapped_column(Integer, default=0)
    paused_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    pause_reason: Mapped[str | None] = mapped_column(String(300), nullable=True)
    # Traces that started before this are only evaluated by an explicit backfill.
    watch_from: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class Evaluation(BigId, Created, Base):
    """One trace to evaluate by one evaluator version: the queue item and its outcome."""

    __tablename__ = "evaluations"
    __table_args__ = (
        UniqueConstraint("evaluator_id", "version", "trace_id"),
        Index("ix_evaluations_due", "status", "due_at"),
        Index("ix_evaluations_project_trace", "project_id", "trace_id"),
        # The evaluator page and the agreement read one evaluator's by finish time (0030).
        Index("ix_evaluations_evaluator_finished", "evaluator_id", "finished_at"),
    )

    project_id: Mapped[int] = mapped_column(Integer)
    evaluator_id: Mapped[int] = mapped_column(ForeignKey("evaluators.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    trace_id: Mapped[str] = mapped_column(String(64))
    # pending -> running -> done | error | skipped (budget or selection changed)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    due_at: Mapped[datetime] = mapped_column(UTCDateTime)
    claim_token: Mapped[str | None] = mapped_column(String(32), nullable=True)
    claimed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    backfill: Mapped[bool] = mapped_column(Boolean, default=False)
    value: Mapped[float | None] = mapped_column(Float, nullable=True)
    label: Mapped[str | None] = mapped_column(String(128), nullable=True)
    reason: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    error: Mapped[str | None] = mapped_column(String(500), nullable=True)
    tokens: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class EvaluatorUsage(Base):
    """Calls and tokens an evaluator spent (or holds reserved) on one UTC day.

    A call reserves its largest possible cost before it is sent and the reservation is
    settled with what the endpoint reports, so the day's budget is never passed.
    """

    __tablename__ = "evaluator_usage"

    evaluator_id: Mapped[int] = mapped_column(
        ForeignKey("evaluators.id", ondelete="CASCADE"), primary_key=True
    )
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    calls: Mapped[int] = mapped_column(Integer, default=0)
    tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    errors: Mapped[int] = mapped_column(Integer, default=0)
