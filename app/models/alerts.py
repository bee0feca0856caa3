"""Alerts and their history, silences, notification channels and the outbox."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, JSONType, UTCDateTime
from app.models.columns import BigId, Created, IntId, ProjectNamed, ProjectOwned


class Alert(BigId, ProjectOwned, Base):
    """One episode of a fingerprint: firing -> acknowledged -> resolved."""

    __tablename__ = "alerts"
    __table_args__ = (
        Index("ix_alerts_project_fingerprint_state", "project_id", "fingerprint", "state"),
        Index("ix_alerts_project_state", "project_id", "state"),
    )

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


class AlertEvent(BigId, ProjectOwned, Base):
    """Every transition of an alert, with who made it and when."""

    __tablename__ = "alert_events"
    __table_args__ = (Index("ix_alert_events_alert_at", "alert_id", "at"),)

    alert_id: Mapped[int] = mapped_column(ForeignKey("alerts.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(24))  # fired|repeat|acknowledged|resolved|silenced..
    from_state: Mapped[str | None] = mapped_column(String(16), nullable=True)
    to_state: Mapped[str | None] = mapped_column(String(16), nullable=True)
    actor: Mapped[str] = mapped_column(String(64))  # "key:<id>" or "system"
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    detail: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)


class Silence(IntId, ProjectOwned, Created, Base):
    """Label matchers (``=``, ``!=``, ``=~``, ``!~``) that mute notifications until ``ends_at``."""

    __tablename__ = "silences"
    __table_args__ = (Index("ix_silences_project_ends", "project_id", "ends_at"),)

    matchers: Mapped[list[dict[str, str]]] = mapped_column(JSONType, default=list)
    starts_at: Mapped[datetime] = mapped_column(UTCDateTime)
    ends_at: Mapped[datetime] = mapped_column(UTCDateTime)
    comment: Mapped[str] = mapped_column(Text, default="")
    created_by: Mapped[str] = mapped_column(String(64))


class Channel(ProjectNamed, Created, Base):
    """Where notifications go: webhook, slack, pagerduty or alertmanager, with routing."""

    __tablename__ = "channels"
    __table_args__ = (UniqueConstraint("project_id", "name"),)

    type: Mapped[str] = mapped_column(String(16))
    url: Mapped[str] = mapped_column(Text)
    # Kept in clear: the sender needs it to sign each body with HMAC.
    secret: Mapped[str | None] = mapped_column(Text, nullable=True)
    # routing_key (pagerduty), min_severity, failure_modes.
    config: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    # Alertmanager's timing for the channel's notification group (app.alerts.groups).
    group_wait_seconds: Mapped[int] = mapped_column(Integer, default=30)
    group_interval_seconds: Mapped[int] = mapped_column(Integer, default=300)


class Notification(BigId, ProjectOwned, Created, Base):
    """The outbox: a row stays ``pending`` until a 2xx, so delivery survives restarts."""

    __tablename__ = "notifications"
    __table_args__ = (
        Index("ix_notifications_due", "status", "next_attempt_at"),
        Index("ix_notifications_channel_due", "channel_id", "due_at"),
    )

    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id", ondelete="CASCADE"))
    alert_id: Mapped[int | None] = mapped_column(
        ForeignKey("alerts.id", ondelete="CASCADE"), nullable=True
    )
    # trigger | acknowledge | resolve, or "mixed" for a group notification of several.
    event: Mapped[str] = mapped_column(String(16))
    payload: Mapped[Any] = mapped_column(JSONType)
    # The group's alerts, one entry each in its latest state (None: rows from before 0012).
    items: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONType, nullable=True)
    # When the group's flush is due (group_wait / group_interval); retries leave it alone.
    due_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # Still takes alerts of its group: until the sender claims it, never again after.
    collecting: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[str] = mapped_column(String(8), default="pending")  # pending|sent|dead
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
