"""API keys: created once and shown once, stored only as a SHA-256 hash.

Keys are 32 random bytes, so a plain SHA-256 (no slow KDF) is safe: nobody can guess a
preimage, and the lookup stays one indexed equality per request.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import Field
from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from app.db import project_row
from app.models import ApiKey, Project
from app.request_model import RequestModel
from app.response_model import ResponseModel, Time

ROLES = ("ingest", "read", "annotate", "admin")
KEY_PREFIX = "tt_"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Principal:
    """Who is calling: the key's project and role."""

    key_id: int
    project_id: int
    project_name: str
    role: str

    @property
    def actor(self) -> str:
        """Who did it, as alert history and silences record it: ``key:<id>``."""
        return f"key:{self.key_id}"

    def can(self, role: str) -> bool:
        """Admin can do everything; ``read`` is implied by ``annotate``; the rest is exact."""
        if self.role == "admin" or self.role == role:
            return True
        return role == "read" and self.role == "annotate"


def get_or_create_project(session: Session, *, name: str) -> Project:
    project = session.scalar(select(Project).where(Project.name == name))
    if project is None:
        project = Project(name=name)
        session.add(project)
        session.flush()
    return project


def create_key(session: Session, *, project_name: str, role: str, name: str = "") -> str:
    """Create a key (and its project when new); return the plaintext key, shown once."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    if not project_name.strip():
        raise ValueError("project name must not be empty")
    project = get_or_create_project(session, name=project_name)
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    session.add(
        ApiKey(project_id=project.id, name=name, prefix=key[:10], key_hash=hash_key(key), role=role)
    )
    session.flush()
    return key


_KEY_BY_HASH = (
    select(ApiKey.id, ApiKey.project_id, ApiKey.role, ApiKey.revoked_at, Project.name)
    .join(Project, Project.id == ApiKey.project_id)
    .where(ApiKey.key_hash == bindparam("key_hash"))
)


def authenticate(session: Session | Connection, *, key: str) -> Principal | None:
    """The principal of a live key. Every API request asks this; a Core connection skips
    the ORM's statement handling (a tenth of a small ingest batch's server time)."""
    row = session.execute(_KEY_BY_HASH, {"key_hash": hash_key(key)}).first()
    if row is None or row.revoked_at is not None:
        return None
    return Principal(key_id=row.id, project_id=row.project_id, project_name=row.name, role=row.role)


def principal_for_key_id(session: Session, *, key_id: int) -> Principal | None:
    """The principal of a live (not revoked) key, found by id (web sessions)."""
    row = session.execute(
        select(ApiKey.id, ApiKey.project_id, ApiKey.role, ApiKey.revoked_at, Project.name)
        .join(Project, Project.id == ApiKey.project_id)
        .where(ApiKey.id == key_id)
    ).first()
    if row is None or row.revoked_at is not None:
        return None
    return Principal(key_id=row.id, project_id=row.project_id, project_name=row.name, role=row.role)


def list_keys(session: Session, *, project_id: int) -> list[ApiKey]:
    return list(
        session.scalars(select(ApiKey).where(ApiKey.project_id == project_id).order_by(ApiKey.id))
    )


def revoke_key(session: Session, *, project_id: int, key_id: int, now: datetime) -> ApiKey | None:
    """Revoke the key (once: a second revoke keeps the first time); None when not found."""
    key = project_row(session, ApiKey, key_id, project_id=project_id)
    if key is not None and key.revoked_at is None:
        key.revoked_at = now
        session.flush()
    return key


class KeyCreate(RequestModel):
    role: Literal["ingest", "read", "annotate", "admin"]
    name: str = Field(default="", max_length=128)


class KeyOut(ResponseModel):
    """A key as listed: its first characters only, never the key."""

    id: int
    name: str
    prefix: str
    role: str
    created_at: Time
    revoked_at: Time | None


class KeyList(ResponseModel):
    keys: list[KeyOut]


class NewKey(ResponseModel):
    """The plaintext key, in the answer that created it and nowhere else."""

    key: str
    role: str
    name: str
