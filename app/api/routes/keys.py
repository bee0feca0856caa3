"""API keys of the caller's project: list, create, revoke (admin only)."""

from __future__ import annotations

from fastapi import APIRouter

from app import keys
from app.api.deps import AdminKey, Int4Id, SessionDep
from app.api.errors import found
from app.keys import KeyCreate, KeyList, KeyOut, NewKey
from app.models.base import utcnow

router = APIRouter(prefix="/api/v1/keys", tags=["keys"])


@router.get("")
def list_keys(principal: AdminKey, session: SessionDep) -> KeyList:
    rows = keys.list_keys(session, project_id=principal.project_id)
    return KeyList(keys=[KeyOut.model_validate(k) for k in rows])


@router.post("", status_code=201)
def create(body: KeyCreate, principal: AdminKey, session: SessionDep) -> NewKey:
    """A new key in the caller's project; the plaintext is in this answer only."""
    key = keys.create_key(
        session, project_name=principal.project_name, role=body.role, name=body.name
    )
    session.commit()
    return NewKey(key=key, role=body.role, name=body.name)


@router.delete("/{key_id}")
def revoke(key_id: Int4Id, principal: AdminKey, session: SessionDep) -> KeyOut:
    revoked = keys.revoke_key(session, project_id=principal.project_id, key_id=key_id, now=utcnow())
    key = found(revoked, "key", key_id)
    session.commit()
    return KeyOut.model_validate(key)
