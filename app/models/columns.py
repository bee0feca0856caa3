"""The columns most tables share, declared once as mixins: the key, the owning project, a
project's named settings, and when the row was created. ``sort_order`` keeps the opening
ones first and in the order the migrations created them (id, project_id, name), and
``created_at`` after a table's own columns."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import BigIntPK, UTCDateTime, utcnow


class BigId:
    """``id``: a BIGINT identity (INTEGER on SQLite), for the tables that grow with traffic."""

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True, sort_order=-3)


class IntId:
    """``id``: an INTEGER key, for the tables of settings (a few rows per project)."""

    id: Mapped[int] = mapped_column(Integer, primary_key=True, sort_order=-3)


class ProjectOwned:
    """``project_id``: the row is one project's and is deleted with it."""

    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), sort_order=-2
    )


class ProjectNamed(IntId, ProjectOwned):
    """A project's named setting (a channel, label queue, monitor or embedding stream); the
    class declares the ``UniqueConstraint("project_id", "name")`` that names it once."""

    name: Mapped[str] = mapped_column(String(128), sort_order=-1)


class Created:
    """``created_at``: when the row was written (UTC)."""

    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, sort_order=1)
