"""API keys of the caller's project: list, create, revoke (admin only)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, HTTPException
from pydantic import Field
from sqlalchemy import select

from app.api.deps import AdminKey, Int4Id, SessionDep
from app.keys import create_key
from app.models import ApiKey
from app.models.base import utcnow
from app.request_model import RequestModel

router = APIRouter(prefix="/api/v1/keys", tags=["keys"])


class KeyCreate(RequestModel):
    role: Literal["ingest", "read", "annotate", "admin"]
    name: str = Field(default="", max_length=128)


def _key_dict(k: ApiKey) -> dict[str, Any]:
    return {
        "id": k.id,
        "name": k.name,
        "prefix": k.prefix,
        "role": k.role,
        "created_at": k.created_at,
        "revoked_at": k.revoked_at,
    }


@router.get("")
def list_keys(principal: AdminKey, session: SessionDep) -> dict[str, Any]:
    keys = session.scalars(
        select(ApiKey).where(ApiKey.project_id == principal.project_id).order_by(ApiKey.id)
    ).all()
    return {"keys": [_key_dict(k) for k in keys]}


@router.post("", status_code=201)
def create(body: KeyCreate, principal: AdminKey, session: SessionDep) -> dict[str, Any]:
    """A new key in the caller's project; the plaintext is in this answer only."""
    key = create_key(session, project_name=principal.project_name, role=body.role, name=body.name)
    session.commit()
    return {"key": key, "role": body.role, "name": body.name}


@router.delete("/{key_id}")
def revoke(key_id: Int4Id, principal: AdminKey, session: SessionDep) -> dict[str, Any]:
    key = session.get(ApiKey, key_id)
    if key is None or key.project_id != principal.project_id:
        raise HTTPException(404, f"key {key_id} not found in this project")
    if key.revoked_at is None:
        key.revoked_at = utcnow()
        session.commit()
    return _key_dict(key)
