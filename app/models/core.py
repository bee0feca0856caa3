"""Projects, keys and everything ingested: traces, spans, span events, scores, embeddings,
event ids."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, JSONType, UTCDateTime, utcnow
from app.models.columns import BigId, Created, IntId, ProjectNamed, ProjectOwned


class Project(Created, Base):
    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    # Days its data is kept; None follows Settings.retention_days.
    retention_days: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # Its rules for the fields derived from its traces (app/derive/config.py); None: defaults.
    derived_field_rules: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)


class ApiKey(IntId, ProjectOwned, Created, Base):
    __tablename__ = "api_keys"

    name: Mapped[str] = mapped_column(String(128), default="")
    prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class Trace(BigId, ProjectOwned, Created, Base):
    __tablename__ = "traces"
    __table_args__ = (
        UniqueConstraint("project_id", "trace_id"),
        Index("ix_traces_project_started", "project_id", "started_at"),
        Index("ix_traces_project_agent", "project_id", "agent", "started_at"),
        # A session's turns and a user's traces, in time (app/sessions/store.py).
        Index("ix_traces_project_session", "project_id", "session_id", "started_at"),
        Index("ix_traces_project_user", "project_id", "user_id", "started_at"),
        # The derive job's queue (app/derive/load.py): only traces not derived yet are in
        # it, each project's in arrival order (a batch takes a share per project).
        Index(
            "ix_traces_derive_pending",
            "project_id",
            "updated_at",
            sqlite_where=text("derived_at IS NULL"),
            postgresql_where=text("derived_at IS NULL"),
        ),
    )

    trace_id: Mapped[str] = mapped_column(String(64))
    agent: Mapped[str] = mapped_column(String(128), default="")
    agent_version: Mapped[str] = mapped_column(String(64), default="")
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    status: Mapped[str] = mapped_column(String(16), default="ok")
    input_hash: Mapped[str | None] = mapped_column(String(128), nullable=True)
    entry_point: Mapped[str | None] = mapped_column(String(128), nullable=True)
    source: Mapped[str] = mapped_column(String(16), default="production")
    counterfactual_of: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # The conversation it is a turn of and the end user it served, read at ingest from the
    # conventions' attributes or the native fields (app/sessions/attributes.py).
    session_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    user_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    attributes: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    # When a piece of it last arrived (trace, span or GenAI event), and when its fields
    # were derived from what had arrived by then; None: not yet, or something came since.
    updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True, default=utcnow)
    derived_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # Its steps as "tool call or not, failed or not", one character a step
    # (detectors/step_profiles.py); None: not computed since the last arrival.
    step_profile: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Why the derive job could not derive it (app/derive/job.py); None once it could.
    derive_error: Mapped[str | None] = mapped_column(String(300), nullable=True)
    # Its spans stored, kept by the ingest write that stores them (app/ingest/trace_size.py).
    span_count: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    # Its longest run of one tool called with the same arguments (app/derive/loops.py):
    # the identical calls (0 without tool calls; None: not derived), and the tool when
    # that run is a loop (None when it is not).
    loop_tool: Mapped[str | None] = mapped_column(String(128), nullable=True)
    loop_calls: Mapped[int | None] = mapped_column(Integer, nullable=True)


class Span(BigId, Base):
    __tablename__ = "spans"
    # Spans are read by trace (the unique index leads with project_id, trace_id); an index
    # on time would cost every insert and serve no query, so there is none. On PostgreSQL
    # the table is partitioned by day of started_at, which the key then also holds, NULLS
    # NOT DISTINCT, and there is no primary key (migration 0013, app/retention/partitions.py).
    __table_args__ = (UniqueConstraint("project_id", "trace_id", "span_id"),)

    project_id: Mapped[int] = mapped_column(Integer)  # no foreign key: migration 0016
    trace_id: Mapped[str] = mapped_column(String(64))
    span_id: Mapped[str] = mapped_column(String(64))
    parent_span_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    kind: Mapped[str] = mapped_column(String(16), default="step")
    name: Mapped[str] = mapped_column(String(256), default="")
    tool_name: Mapped[str | None] = mapped_column(String(128), nullable=True)
    status: Mapped[str] = mapped_column(String(16), default="ok")
    error_type: Mapped[str | None] = mapped_column(String(128), nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    step_index: Mapped[int | None] = mapped_column(Integer, nullable=True)
    confidence: Mapped[float | None] = mapped_column(Float, nullable=True)
    # Normalised from whichever convention sent them (app/otlp/normalise.py) or given
    # natively; the raw attributes stay in ``attributes``.
    request_model: Mapped[str | None] = mapped_column(String(128), nullable=True)
    response_model: Mapped[str | None] = mapped_column(String(128), nullable=True)
    input_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    output_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    total_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    cost: Mapped[float | None] = mapped_column(Float, nullable=True)
    # Where ``cost`` came from when Telltale priced the call (app/pricing/calls.py):
    # ``table <version>`` or ``project <time>``; or why an LLM call has none: ``no price``,
    # ``no tokens``, ``no model``. None: as sent (or not priced yet: the derive job prices).
    cost_source: Mapped[str | None] = mapped_column(String(32), nullable=True)
    latency_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    attributes: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)


class SpanEvent(BigId, Base):
    """A GenAI event (an OTLP log record: prompt, choice, evaluation...) of one span.

    Keyed by ``(trace_id, span_id)`` and joined to the span when read, so the event and its
    span may arrive in either order; the span row is never rewritten for it.
    """

    __tablename__ = "span_events"
    __table_args__ = (Index("ix_span_events_project_trace", "project_id", "trace_id"),)

    project_id: Mapped[int] = mapped_column(Integer)  # no foreign key: migration 0016
    trace_id: Mapped[str] = mapped_column(String(64))
    span_id: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(128))
    time: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    attributes: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    body: Mapped[Any] = mapped_column(JSONType, nullable=True)


class Score(BigId, Created, Base):
    __tablename__ = "scores"
    __table_args__ = (
        Index("ix_scores_project_trace", "project_id", "trace_id"),
        Index("ix_scores_project_name_created", "project_id", "name", "created_at"),
    )

    project_id: Mapped[int] = mapped_column(Integer)  # no foreign key: migration 0016
    trace_id: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(128))
    value: Mapped[float] = mapped_column(Float)
    kind: Mapped[str] = mapped_column(String(16), default="proxy")
    source: Mapped[str] = mapped_column(String(16), default="online")
    # An evaluator's verdict beside its number ("relevant", "hallucinated") and its reason.
    label: Mapped[str | None] = mapped_column(String(128), nullable=True)
    explanation: Mapped[str | None] = mapped_column(String(2000), nullable=True)


class EmbeddingStream(ProjectNamed, Created, Base):
    """One named stream of vectors; its first vectors fix ``dim`` for every later one."""

    __tablename__ = "embedding_streams"
    __table_args__ = (UniqueConstraint("project_id", "name"),)

    model: Mapped[str] = mapped_column(String(128), default="")
    dim: Mapped[int] = mapped_column(Integer)


class Embedding(BigId, Created, Base):
    """A float32 little-endian vector; never a JSON array in the database."""

    __tablename__ = "embeddings"
    __table_args__ = (
        Index("ix_embeddings_project_stream_created", "project_id", "stream", "created_at"),
        Index("ix_embeddings_project_trace", "project_id", "trace_id"),
    )

    project_id: Mapped[int] = mapped_column(Integer)  # no foreign key: migration 0016
    stream: Mapped[str] = mapped_column(String(128))
    model: Mapped[str] = mapped_column(String(128), default="")
    dim: Mapped[int] = mapped_column(Integer)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    trace_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    sample_id: Mapped[str | None] = mapped_column(String(128), nullable=True)


class IngestEvent(Created, Base):
    """Client event ids already committed: a re-sent id is a duplicate and writes nothing."""

    __tablename__ = "ingest_events"

    project_id: Mapped[int] = mapped_column(Integer, primary_key=True)  # no foreign key: 0016
    event_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    type: Mapped[str] = mapped_column(String(16))


class IngestMinute(Base):
    """Events accepted per project, minute and type: the overview's ingestion rate.

    Counting ``ingest_events`` for the last hour scans every event of a busy project;
    one upsert per batch here keeps that read to at most 60 rows per type.
    """

    __tablename__ = "ingest_minutes"

    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    )
    minute: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)
    type: Mapped[str] = mapped_column(String(16), primary_key=True)
    events: Mapped[int] = mapped_column(Integer, default=0)
