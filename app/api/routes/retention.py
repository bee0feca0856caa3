"""The caller's project's data retention: read and set (admin only)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException

from app.api.deps import AdminKey, SessionDep, SettingsDep
from app.models import Project
from app.retention.policy import RetentionOut, RetentionUpdate, retention_view, set_retention

router = APIRouter(prefix="/api/v1/project/retention", tags=["retention"])


@router.get("")
def get_retention(principal: AdminKey, session: SessionDep, settings: SettingsDep) -> RetentionOut:
    project = session.get(Project, principal.project_id)
    if project is None:
        raise HTTPException(404, "project not found")
    return retention_view(project, default_days=settings.retention_days)


@router.put("")
def put_retention(
    body: RetentionUpdate, principal: AdminKey, session: SessionDep, settings: SettingsDep
) -> RetentionOut:
    """Keep this project's data ``retention_days`` days (null: the server's default)."""
    try:
        project = set_retention(session, project_id=principal.project_id, days=body.retention_days)
    except LookupError:
        raise HTTPException(404, "project not found") from None
    session.commit()
    return retention_view(project, default_days=settings.retention_days)
