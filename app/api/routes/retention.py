"""The caller's project's data retention: read and set (admin only)."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import SessionDep, SettingsDep
from app.api.errors import AdminProject
from app.retention.policy import RetentionOut, RetentionUpdate, retention_view, set_retention

router = APIRouter(prefix="/api/v1/project/retention", tags=["retention"])


@router.get("")
def get_retention(project: AdminProject, settings: SettingsDep) -> RetentionOut:
    return retention_view(project, default_days=settings.retention_days)


@router.put("")
def put_retention(
    body: RetentionUpdate, project: AdminProject, session: SessionDep, settings: SettingsDep
) -> RetentionOut:
    """Keep this project's data ``retention_days`` days (null: the server's default)."""
    set_retention(session, project_id=project.id, days=body.retention_days)
    session.commit()
    return retention_view(project, default_days=settings.retention_days)
