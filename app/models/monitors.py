"""Monitors, their runs, and the findings of runs that fired."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, JSONType, UTCDateTime, utcnow
from app.models.columns import BigId, Created, ProjectNamed, ProjectOwned


class Monitor(ProjectNamed, Created, Base):
    """A failure mode, a detector configuration, a data selection and a schedule."""

    __tablename__ = "monitors"
    __table_args__ = (
        UniqueConstraint("project_id", "name"),
        Index("ix_monitors_due", "enabled", "next_run_at"),
    )

    failure_mode: Mapped[str] = mapped_column(String(8))
    detector_params: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    # agent, stream, source, current_window_seconds, reference_window_seconds,
    # reference_start, reference_end (a frozen reference), reference_version, max_traces.
    selection: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    interval_seconds: Mapped[int] = mapped_column(Integer, default=300)
    severity: Mapped[str] = mapped_column(String(16), default="warning")
    labels: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    auto_resolve_after: Mapped[int] = mapped_column(Integer, default=3)
    repeat_interval_seconds: Mapped[int] = mapped_column(Integer, default=3600)
    time_limit_seconds: Mapped[float] = mapped_column(Float, default=60.0)
    # The false-alert budget in wall-clock time; the per-run alpha is derived from it and
    # the interval (app.monitors.decision.calibration).
    expected_days_between_false_alerts: Mapped[float] = mapped_column(Float, default=30.0)
    # An EWMA chart over the runs' p-values beside the per-run test (half the budget each).
    sequential: Mapped[bool] = mapped_column(Boolean, default=True)
    # Prometheus's ``for``: runs must keep firing this long before an alert opens.
    for_seconds: Mapped[int] = mapped_column(Integer, default=0)
    # The scheduler's lease: a process runs the monitor only after moving this forward
    # with a compare-and-set (see app.scheduler.leader).
    next_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # The slot of the run a scheduler claimed and has not recorded yet, and when that claim
    # is taken for a stopped process (app.scheduler.interrupted).
    claimed_slot: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    claim_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class MonitorBaseline(Base):
    """Where a monitor's reference stands: the end of its last known-good period.

    The reference only advances over periods that passed; while an alert is open, and for
    ``baseline_hold_seconds`` after it resolves, it stays where it was when the alert
    opened (:mod:`app.monitors.decision.baseline`). One row per monitor, written by every run.
    """

    __tablename__ = "monitor_baselines"

    monitor_id: Mapped[int] = mapped_column(
        ForeignKey("monitors.id", ondelete="CASCADE"), primary_key=True
    )
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    good_until: Mapped[datetime] = mapped_column(UTCDateTime)
    frozen_since: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    hold_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    degradation_started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # The sequential chart (app.monitors.decision.sequential): z, observations, last observed window.
    chart_z: Mapped[float] = mapped_column(Float, default=0.0)
    chart_t: Mapped[int] = mapped_column(Integer, default=0)
    chart_window_end: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # The first of the consecutive fired runs while no alert is open (``for_seconds``).
    pending_since: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DetectorRun(BigId, ProjectOwned, Created, Base):
    """One run of a monitor, persisted whether it fired or not."""

    __tablename__ = "detector_runs"
    __table_args__ = (
        Index("ix_detector_runs_monitor_at", "monitor_id", "at"),
        # At most one scheduled run per monitor and slot, whatever the number of schedulers.
        UniqueConstraint("monitor_id", "scheduled_for"),
    )

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
    # The current window's data-readiness counts, taken while the run loaded it: the
    # overview reads them instead of counting again (app/monitors/readiness/recorded.py).
    readiness_counts: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)


class Finding(BigId, ProjectOwned, Base):
    """A run that fired: what was found, and the alert it raised or refreshed."""

    __tablename__ = "findings"
    __table_args__ = (Index("ix_findings_project_mode_at", "project_id", "failure_mode", "at"),)

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
