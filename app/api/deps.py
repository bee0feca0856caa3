"""Dependencies of the JSON API: the calling key's principal (a bearer key, or the web
login's cookie with its CSRF token), role checks, and the outbound policy channel URLs are
checked against. Engine, settings, session, monitor runner and id types come from :mod:`app.deps`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, HTTPException, Request

from app.alerts.outbound import OutboundPolicy
from app.auth.logins import cookie_principal
from app.auth.tenants import learn_tenant
from app.deps import EngineDep, Int4Id, Int8Id, MonitorRunnerDep, SessionDep, SettingsDep
from app.keys import Principal, authenticate

__all__ = [
    "AdminKey",
    "AnnotateKey",
    "EngineDep",
    "IngestKey",
    "Int4Id",
    "Int8Id",
    "MonitorRunnerDep",
    "OutboundDep",
    "ReadKey",
    "SessionDep",
    "SettingsDep",
    "get_outbound",
    "get_principal",
    "key_from_request",
    "require",
]


def get_outbound(settings: SettingsDep) -> OutboundPolicy:
    return OutboundPolicy.from_allow(settings.outbound_allow)


OutboundDep = Annotated[OutboundPolicy, Depends(get_outbound)]


def key_from_request(request: Request) -> str | None:
    auth = request.headers.get("authorization")
    if auth:
        scheme, _, token = auth.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    key = request.headers.get("x-api-key")
    if key:
        return key.strip()
    return None


def _missing_key(request: Request) -> str:
    """Why no key was read; an Authorization header without its scheme (a bare key, as
    exporters' header settings tempt) is told how to write it."""
    if request.headers.get("authorization", "").strip():
        return (
            "the Authorization header is not 'Bearer <key>': write "
            "'Authorization: Bearer <key>' (the word Bearer, a space, then the key), "
            "or send 'x-api-key: <key>'"
        )
    return "missing API key: send 'Authorization: Bearer <key>' or 'x-api-key: <key>'"


def get_principal(request: Request) -> Principal:
    key = key_from_request(request)
    if not key:
        from_cookie = cookie_principal(request)
        if from_cookie is not None:
            return from_cookie
        raise HTTPException(401, _missing_key(request), headers={"WWW-Authenticate": "Bearer"})
    with request.app.state.engine.connect() as conn:
        principal = authenticate(conn, key=key)
    if principal is None:
        raise HTTPException(
            401, "invalid or revoked API key", headers={"WWW-Authenticate": "Bearer"}
        )
    learn_tenant(request.app.state, key, project_id=principal.project_id)
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
