"""Dependencies declared once: the engine, a session, and the calling key's principal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.keys import Principal, authenticate
from app.settings import Settings


def get_engine(request: Request) -> Engine:
    return request.app.state.engine


def get_settings_dep(request: Request) -> Settings:
    return request.app.state.settings


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.sessionmaker() as session:
        yield session


EngineDep = Annotated[Engine, Depends(get_engine)]
SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
SessionDep = Annotated[Session, Depends(get_session)]


def key_from_request(request: Request) -> str | None:
    auth = request.headers.get("authorization")
    if auth:
        scheme, _, token = auth.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    key = request.headers.get("x-api-key")
    if key:
        return key.strip()
    session_key = getattr(request.state, "session_api_key", None)
    return session_key


def get_principal(request: Request) -> Principal:
    key = key_from_request(request)
    if not key:
        raise HTTPException(
            401,
            "missing API key: send 'Authorization: Bearer <key>' or 'x-api-key: <key>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    with request.app.state.sessionmaker() as session:
        principal = authenticate(session, key=key)
    if principal is None:
        raise HTTPException(
            401, "invalid or revoked API key", headers={"WWW-Authenticate": "Bearer"}
        )
    return principal


def require(role: str) -> Callable[..., Principal]:
    """A dependency that admits keys allowed to act as ``role`` (admin always is)."""

    def check(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
        if not principal.can(role):
            raise HTTPException(
                403, f"this key has role {principal.role!r}; this action needs {role!r}"
            )
        return principal

    return check


IngestKey = Annotated[Principal, Depends(require("ingest"))]
ReadKey = Annotated[Principal, Depends(require("read"))]
AnnotateKey = Annotated[Principal, Depends(require("annotate"))]
AdminKey = Annotated[Principal, Depends(require("admin"))]
