"""Dependencies declared once: the engine, a session, the calling key's principal, and the
outbound policy channel URLs are checked against, and the bounded id types every route's
path and query ids use."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated

from annotated_types import Interval
from fastapi import Depends, HTTPException, Request
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.alerts.outbound import OutboundPolicy
from app.keys import Principal, authenticate
from app.settings import Settings


def get_engine(request: Request) -> Engine:
    return request.app.state.engine


def get_settings_dep(request: Request) -> Settings:
    return request.app.state.settings


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.sessionmaker() as session:
        yield session


# Row ids as their columns hold them: INTEGER is int4 on PostgreSQL (projects, keys,
# monitors, channels, silences, label queues), BIGINT int8 (traces, runs, findings, alerts,
# queue items, media jobs). Past the column an id would overflow the driver (a 500 on
# SQLite, a DataError on PostgreSQL); bounded here it is a 422 naming the parameter.
Int4Id = Annotated[int, Interval(ge=1, le=2**31 - 1)]
Int8Id = Annotated[int, Interval(ge=1, le=2**63 - 1)]

EngineDep = Annotated[Engine, Depends(get_engine)]
SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
SessionDep = Annotated[Session, Depends(get_session)]


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


_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def _principal_from_cookie(request: Request) -> Principal | None:
    """The web UI's session cookie, for the UI's own calls to the JSON API.

    A cookie is sent by the browser on its own, so unsafe methods also need the session's
    CSRF token in ``X-CSRF-Token``.
    """
    from app.web.logins import current_login, session_secret
    from app.web.session import COOKIE, csrf_ok

    if not request.cookies.get(COOKIE):
        return None
    login = current_login(request)
    if login is None:
        return None
    web, principal = login
    if request.method not in _SAFE_METHODS and not csrf_ok(
        session_secret(request), web.nonce, request.headers.get("x-csrf-token")
    ):
        raise HTTPException(403, "missing or wrong X-CSRF-Token for a cookie-authenticated request")
    return principal


def get_principal(request: Request) -> Principal:
    key = key_from_request(request)
    if not key:
        from_cookie = _principal_from_cookie(request)
        if from_cookie is not None:
            return from_cookie
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
