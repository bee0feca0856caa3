"""The monitoring engine's tables: monitors, their runs and findings, alerts, silences,
notification channels and the notification outbox."""

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


class Monitor(Base):
    """A failure mode, a detector configuration, a data selection and a schedule."""

    __tablename__ = "monitors"
    __table_args__ = (
        UniqueConstraint("project_id", "name"),
        Index("ix_monitors_due", "enabled", "next_run_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(128))
    failure_mode: Mapped[str] = mapped_column(String(8))
    detector_params: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    # agent, stream, source, current_window_seconds, reference_window_seconds,
    # reference_start, reference_end (a frozen reference), max_traces.
    selection: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    interval_seconds: Mapped[int] = mapped_column(Integer, default=300)
    severity: Mapped[str] = mapped_column(String(16), default="warning")
    labels: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    auto_resolve_after: Mapped[int] = mapped_column(Integer, default=3)
    repeat_interval_seconds: Mapped[int] = mapped_column(Integer, default=3600)
    time_limit_seconds: Mapped[float] = mapped_column(Float, default=60.0)
    # The scheduler's lease: a process runs the monitor only after moving this forward
    # with a compare-and-set (see app.scheduler.leader).
    next_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DetectorRun(Base):
    """One run of a monitor, persisted whether it fired or not."""

    __tablename__ = "detector_runs"
    __table_args__ = (
        Index("ix_detector_runs_monitor_at", "monitor_id", "at"),
        # At most one scheduled run per monitor and slot, whatever the number of schedulers.
        UniqueConstraint("monitor_id", "scheduled_for"),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    monitor_id: Mapped[int] = mapped_column(ForeignKey("monitors.id", ondelete="CASCADE"))
    failure_mode: Mapped[str] = mapped_column(String(8))
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    scheduled_for: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    window_start: Mapped[datetime] = mapped_column(UTCDateTime)
    window_end: Mapped[datetime] = mapped_column(UTCDateTime)
    reference_start: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    reference_end: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    status: Mapped[str] = mapped_column(String(24))  # ok | insufficient_data | failed
    statistic: Mapped[float | None] = mapped_column(Float, nullable=True)
    threshold: Mapped[float | None] = mapped_column(Float, nullable=True)
    p_value: Mapped[float | None] = mapped_column(Float, nullable=True)
    fired: Mapped[bool] = mapped_column(Boolean, default=False)
    evidence: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    n_current: Mapped[int] = mapped_column(Integer, default=0)
    n_reference: Mapped[int] = mapped_column(Integer, default=0)
    duration_ms: Mapped[float] = mapped_column(Float, default=0.0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Finding(Base):
    """A run that fired: what was found, and the alert it raised or refreshed."""

    __tablename__ = "findings"
    __table_args__ = (Index("ix_findings_project_mode_at", "project_id", "failure_mode", "at"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    monitor_id: Mapped[int] = mapped_column(ForeignKey("monitors.id", ondelete="CASCADE"))
    run_id: Mapped[int] = mapped_column(ForeignKey("detector_runs.id", ondelete="CASCADE"))
    alert_id: Mapped[int | None] = mapped_column(
        ForeignKey("alerts.id", ondelete="SET NULL"), nullable=True
    )
    failure_mode: Mapped[str] = mapped_column(String(8))
    severity: Mapped[str] = mapped_column(String(16))
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    statistic: Mapped[float | None] = mapped_column(Float, nullable=True)
    threshold: Mapped[float | None] = mapped_column(Float, nullable=True)
    p_value: Mapped[float | None] = mapped_column(Float, nullable=True)
    evidence: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)


class Alert(Base):
    """One episode of a fingerprint: firing -> acknowledged -> resolved."""

    __tablename__ = "alerts"
    __table_args__ = (
        Index("ix_alerts_project_fingerprint_state", "project_id", "fingerprint", "state"),
        Index("ix_alerts_project_state", "project_id", "state"),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    monitor_id: Mapped[int | None] = mapped_column(
        ForeignKey("monitors.id", ondelete="SET NULL"), nullable=True
    )
    fingerprint: Mapped[str] = mapped_column(String(64))
    failure_mode: Mapped[str] = mapped_column(String(8))
    severity: Mapped[str] = mapped_column(String(16))
    labels: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    state: Mapped[str] = mapped_column(String(16), default="firing")
    summary: Mapped[str] = mapped_column(Text, default="")
    evidence: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    count: Mapped[int] = mapped_column(Integer, default=1)
    clean_runs: Mapped[int] = mapped_column(Integer, default=0)
    silenced: Mapped[bool] = mapped_column(Boolean, default=False)
    first_fired_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_fired_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_notified_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    acknowledged_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    acknowledged_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    resolved_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    resolved_by: Mapped[str | None] = mapped_column(String(64), nullable=True)


class AlertEvent(Base):
    """Every transition of an alert, with who made it and when."""

    __tablename__ = "alert_events"
    __table_args__ = (Index("ix_alert_events_alert_at", "alert_id", "at"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    alert_id: Mapped[int] = mapped_column(ForeignKey("alerts.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(24))  # fired|repeat|acknowledged|resolved|silenced..
    from_state: Mapped[str | None] = mapped_column(String(16), nullable=True)
    to_state: Mapped[str | None] = mapped_column(String(16), nullable=True)
    actor: Mapped[str] = mapped_column(String(64))  # "key:<id>" or "system"
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    detail: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)


class Silence(Base):
    """Label matchers (``=``, ``!=``, ``=~``, ``!~``) that mute notifications until ``ends_at``."""

    __tablename__ = "silences"
    __table_args__ = (Index("ix_silences_project_ends", "project_id", "ends_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    matchers: Mapped[list[dict[str, str]]] = mapped_column(JSONType, default=list)
    starts_at: Mapped[datetime] = mapped_column(UTCDateTime)
    ends_at: Mapped[datetime] = mapped_column(UTCDateTime)
    comment: Mapped[str] = mapped_column(Text, default="")
    created_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Channel(Base):
    """Where notifications go: webhook, slack, pagerduty or alertmanager, with routing."""

    __tablename__ = "channels"
    __table_args__ = (UniqueConstraint("project_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(128))
    type: Mapped[str] = mapped_column(String(16))
    url: Mapped[str] = mapped_column(Text)
    # Kept in clear: the sender needs it to sign each body with HMAC.
    secret: Mapped[str | None] = mapped_column(Text, nullable=True)
    # routing_key (pagerduty), min_severity, failure_modes.
    config: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Notification(Base):
    """The outbox: a row stays ``pending`` until a 2xx, so delivery survives restarts."""

    __tablename__ = "notifications"
    __table_args__ = (Index("ix_notifications_due", "status", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id", ondelete="CASCADE"))
    alert_id: Mapped[int | None] = mapped_column(
        ForeignKey("alerts.id", ondelete="CASCADE"), nullable=True
    )
    event: Mapped[str] = mapped_column(String(16))  # trigger | acknowledge | resolve
    payload: Mapped[Any] = mapped_column(JSONType)
    status: Mapped[str] = mapped_column(String(8), default="pending")  # pending|sent|dead
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class SchedulerLease(Base):
    """Named periodic jobs run once per interval across scheduler processes."""

    __tablename__ = "scheduler_leases"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    next_run_at: Mapped[datetime] = mapped_column(UTCDateTime)
    holder: Mapped[str] = mapped_column(String(128), default="")
