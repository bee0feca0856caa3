"""A project's score roles: which score names are proxies, true objectives or guardrails,
and which score sources count as ground-truth labels.

One row per project, kept apart from ``projects`` so that changing roles never rewrites
the project row. Roles are applied when monitor windows are read
(:mod:`app.scores.roles`), never written into ``scores``: a role change re-reads history.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, JSONType, UTCDateTime, utcnow


class ScoreRoleConfig(Base):
    __tablename__ = "project_score_roles"

    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    )
    # {"helpfulness": "proxy", "resolved": "true", "toxicity": "guardrail"}
    roles: Mapped[dict[str, str]] = mapped_column(JSONType, default=dict)
    # The score sources whose ``true`` scores are ground-truth labels (FM-4, FM-2).
    label_sources: Mapped[list[str]] = mapped_column(JSONType, default=list)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
