"""The caller's project's rules for derived fields: read and set (admin only).

The path (``/api/v1/project/signals``), the operations and the schemas keep their first names
for the clients that call them.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from sqlalchemy.orm import Session

from app.api.deps import AdminKey, SessionDep, SettingsDep
from app.derive.config import SignalConfig, SignalConfigOut, set_signal_config, signals_view
from app.models import Project

router = APIRouter(prefix="/api/v1/project/signals", tags=["signals"])


@router.get("")
def get_signals(principal: AdminKey, session: SessionDep, settings: SettingsDep) -> SignalConfigOut:
    project = session.get(Project, principal.project_id)
    if project is None:
        raise HTTPException(404, "project not found")
    return signals_view(project, server_embeddings=settings.derive_text_embeddings)


@router.put("")
def put_signals(
    body: SignalConfig, principal: AdminKey, session: SessionDep, settings: SettingsDep
) -> SignalConfigOut:
    """Derive this project's fields by these rules (parts left out keep their defaults)."""
    return _save(session, principal.project_id, body, settings.derive_text_embeddings)


@router.delete("")
def delete_signals(
    principal: AdminKey, session: SessionDep, settings: SettingsDep
) -> SignalConfigOut:
    """Back to every default."""
    return _save(session, principal.project_id, None, settings.derive_text_embeddings)


def _save(
    session: Session, project_id: int, config: SignalConfig | None, server_embeddings: bool
) -> SignalConfigOut:
    try:
        project = set_signal_config(session, project_id=project_id, config=config)
    except LookupError:
        raise HTTPException(404, "project not found") from None
    session.commit()
    return signals_view(project, server_embeddings=server_embeddings)
