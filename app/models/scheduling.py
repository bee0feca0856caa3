"""The scheduler's leases on named periodic jobs."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, UTCDateTime


class SchedulerLease(Base):
    """Named periodic jobs run once per interval across scheduler processes."""

    __tablename__ = "scheduler_leases"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    next_run_at: Mapped[datetime] = mapped_column(UTCDateTime)
    holder: Mapped[str] = mapped_column(String(128), default="")
