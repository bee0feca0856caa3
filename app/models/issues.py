"""Failure issues: failure events grouped by fingerprint, their states and the templates
that group them (:mod:`app.issues`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, UTCDateTime
from app.models.columns import BigId, Created, ProjectOwned


class FailureIssue(BigId, ProjectOwned, Created, Base):
    """One distinct way an agent fails: every failure event with its fingerprint.

    The fingerprint hashes (agent, span kind, tool, error type, template id); the template
    id is the Drain cluster's, so an issue keeps its id while its title (the cluster's
    template) generalises. ``status`` is what a person set (open, resolved, ignored,
    muted); the state read (new, ongoing, resolved, regressed...) is computed from it and
    the times (:mod:`app.issues.states`). The counts are summaries that retention keeps.
    """

    __tablename__ = "failure_issues"
    __table_args__ = (
        UniqueConstraint("project_id", "fingerprint"),
        Index("ix_failure_issues_project_last_seen", "project_id", "last_seen"),
    )

    fingerprint: Mapped[str] = mapped_column(String(64))
    agent: Mapped[str] = mapped_column(String(128), default="")
    span_kind: Mapped[str] = mapped_column(String(16), default="")
    tool: Mapped[str] = mapped_column(String(128), default="")
    error_type: Mapped[str] = mapped_column(String(128), default="")
    template_id: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(String(1000))
    first_seen: Mapped[datetime] = mapped_column(UTCDateTime)
    last_seen: Mapped[datetime] = mapped_column(UTCDateTime)
    event_count: Mapped[int] = mapped_column(Integer, default=0)
    trace_count: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(16), default="open")
    status_note: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    status_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # When it came back after it was resolved (by a person, or quiet for the quiet time).
    regressed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class FailureEvent(BigId, Base):
    """One failure of one trace (a failed step, a failed tool call, a loop, a failed
    derivation), written with the trace's derived fields and replaced when it is derived
    again. Retention deletes events by time; their issue keeps its counts."""

    __tablename__ = "failure_events"
    __table_args__ = (
        Index("ix_failure_events_project_trace", "project_id", "trace_id"),
        Index("ix_failure_events_issue_at", "issue_id", "at"),
    )

    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    issue_id: Mapped[int] = mapped_column(ForeignKey("failure_issues.id", ondelete="CASCADE"))
    trace_id: Mapped[str] = mapped_column(String(64))
    span_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    source: Mapped[str] = mapped_column(String(16))  # step, tool, loop, derive
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    agent: Mapped[str] = mapped_column(String(128), default="")
    agent_version: Mapped[str] = mapped_column(String(64), default="")
    tool: Mapped[str] = mapped_column(String(128), default="")
    span_kind: Mapped[str] = mapped_column(String(16), default="")
    error_type: Mapped[str] = mapped_column(String(128), default="")
    message: Mapped[str] = mapped_column(String(1000), default="")


class IssueStateChange(BigId, Base):
    """A change of an issue's state, by a person (the key's name) or by Telltale."""

    __tablename__ = "failure_issue_changes"
    __table_args__ = (Index("ix_failure_issue_changes_issue_at", "issue_id", "at"),)

    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    issue_id: Mapped[int] = mapped_column(ForeignKey("failure_issues.id", ondelete="CASCADE"))
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    actor: Mapped[str] = mapped_column(String(128))
    from_state: Mapped[str] = mapped_column(String(16))
    to_state: Mapped[str] = mapped_column(String(16))
    note: Mapped[str | None] = mapped_column(String(1000), nullable=True)


class FailureTemplate(Base):
    """One Drain cluster of a project's failure messages: the miner's state, rebuilt from
    these rows after a restart so that template ids (and so issues) stay the same.
    ``revision`` is the write that last changed it: a cached miner older than the
    project's newest revision is rebuilt (another process derived meanwhile)."""

    __tablename__ = "failure_templates"

    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    )
    template_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    template: Mapped[str] = mapped_column(String(2000))
    size: Mapped[int] = mapped_column(Integer, default=0)
    revision: Mapped[int] = mapped_column(Integer, default=0)
