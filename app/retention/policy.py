"""How long a project keeps its data: its own ``retention_days``, else the settings' default."""

from __future__ import annotations

from pydantic import Field
from sqlalchemy.orm import Session

from app.models import Project
from app.request_model import RequestModel
from app.response_model import ResponseModel

MAX_RETENTION_DAYS = 36_500


class RetentionUpdate(RequestModel):
    """``retention_days``: the project's own days, or null to follow the default."""

    retention_days: int | None = Field(ge=1, le=MAX_RETENTION_DAYS)


class RetentionOut(ResponseModel):
    retention_days: int | None  # the project's own setting; null follows default_days
    default_days: int
    effective_days: int


def retention_view(project: Project, *, default_days: int) -> RetentionOut:
    return RetentionOut(
        retention_days=project.retention_days,
        default_days=default_days,
        effective_days=project.retention_days or default_days,
    )


def set_retention(session: Session, *, project_id: int, days: int | None) -> Project:
    """Set (or, with None, clear) the project's retention; the caller commits."""
    project = session.get(Project, project_id)
    if project is None:  # the caller's key names it, so only a race with its deletion
        raise LookupError(f"project {project_id} not found")
    project.retention_days = days
    return project
