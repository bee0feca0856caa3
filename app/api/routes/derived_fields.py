"""The caller's project's rules for derived fields: read and set (admin only).

The path (``/api/v1/project/signals``), the operations and the schemas keep their first names
for the clients that call them.
"""

from __future__ import annotations

from fastapi import APIRouter
from sqlalchemy.orm import Session

from app.api.deps import SessionDep, SettingsDep
from app.api.errors import AdminProject
from app.derive.config import SignalConfig, SignalConfigOut, set_signal_config, signals_view
from app.models import Project
from app.settings import Settings

router = APIRouter(prefix="/api/v1/project/signals", tags=["signals"])


@router.get("")
def get_signals(project: AdminProject, settings: SettingsDep) -> SignalConfigOut:
    return signals_view(project, server_embeddings=settings.derive_text_embeddings)


@router.put("")
def put_signals(
    body: SignalConfig, project: AdminProject, session: SessionDep, settings: SettingsDep
) -> SignalConfigOut:
    """Derive this project's fields by these rules (parts left out keep their defaults)."""
    return _save(session, project, body, settings)


@router.delete("")
def delete_signals(
    project: AdminProject, session: SessionDep, settings: SettingsDep
) -> SignalConfigOut:
    """Back to every default."""
    return _save(session, project, None, settings)


def _save(
    session: Session, project: Project, config: SignalConfig | None, settings: Settings
) -> SignalConfigOut:
    set_signal_config(session, project_id=project.id, config=config)
    session.commit()
    return signals_view(project, server_embeddings=settings.derive_text_embeddings)
