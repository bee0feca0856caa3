"""What the retention job remembers between passes (app/retention/orphans.py)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, UTCDateTime


class OrphanTrace(Base):
    """A trace id with spans or span events but no trace row, and when retention first saw it.

    The rows of a trace with no time of their own expire from this sighting: the trace is
    taken as abandoned once it has waited a whole retention for its trace row. Forgotten as
    soon as the trace row arrives or the rows are gone.
    """

    __tablename__ = "orphan_traces"

    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    )
    trace_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    first_seen_at: Mapped[datetime] = mapped_column(UTCDateTime)
