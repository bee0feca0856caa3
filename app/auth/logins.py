"""Web logins held server-side: the session secret, and one row per logged-in browser.

A signed cookie alone cannot be ended before it expires, so each login also writes a
``web_sessions`` row that logout deletes; a cookie without its row is no login. The
signing secret is ``TELLTALE_SECRET_KEY`` when set, otherwise a random one generated on
first use and kept in the database, so no installation ever runs on a public default.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime

from fastapi import HTTPException, Request
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from app.auth.cookies import (
    COOKIE,
    WebSession,
    csrf_ok,
    decode_session,
    encode_session,
    new_session,
)
from app.auth.tenants import learn_tenant
from app.keys import Principal, principal_for_key_id
from app.models import InstallationSecret
from app.models import WebSession as WebSessionRow
from app.models.base import utcnow

SESSION_SECRET = "session"


def installation_secret(make_session: sessionmaker[Session], *, name: str) -> str:
    """The installation's secret ``name``, generated (384 random bits) the first time."""
    with make_session() as session:
        row = session.get(InstallationSecret, name)
        if row is not None:
            return row.value
        value = secrets.token_urlsafe(48)
        session.add(InstallationSecret(name=name, value=value))
        try:
            session.commit()
            return value
        except IntegrityError:
            # Another replica generated it first: everyone must sign with the same one.
            session.rollback()
    with make_session() as session:
        return session.scalars(
            select(InstallationSecret.value).where(InstallationSecret.name == name)
        ).one()


def session_secret(request: Request) -> str:
    """The secret that signs cookies and CSRF tokens (cached on the app once read)."""
    state = request.app.state
    cached: str | None = getattr(state, "secret_key", None)
    if cached is None:
        configured = state.settings.secret_key
        cached = (
            configured.get_secret_value()
            if configured is not None
            else installation_secret(state.sessionmaker, name=SESSION_SECRET)
        )
        state.secret_key = cached
    return cached


def _nonce_hash(nonce: str) -> str:
    return hashlib.sha256(nonce.encode()).hexdigest()


def start_login(request: Request, *, key_id: int) -> str:
    """Record a new login for ``key_id``; return the cookie value to set."""
    web = new_session(key_id)
    now = utcnow()
    with request.app.state.sessionmaker() as session:
        # Expired rows are useless; dropping them here keeps the table the size of the
        # logged-in population without a separate job.
        session.execute(delete(WebSessionRow).where(WebSessionRow.expires_at < now))
        session.add(
            WebSessionRow(
                key_id=key_id,
                nonce_hash=_nonce_hash(web.nonce),
                expires_at=datetime.fromtimestamp(web.expires, UTC),
            )
        )
        session.commit()
    return encode_session(session_secret(request), web)


def current_login(request: Request) -> tuple[WebSession, Principal] | None:
    """The browser's live login: a valid signature, its row, and a key not revoked."""
    web = decode_session(session_secret(request), request.cookies.get(COOKIE))
    if web is None:
        return None
    with request.app.state.sessionmaker() as session:
        alive = session.scalar(
            select(WebSessionRow.id).where(
                WebSessionRow.nonce_hash == _nonce_hash(web.nonce),
                WebSessionRow.key_id == web.key_id,
                WebSessionRow.expires_at > utcnow(),
            )
        )
        principal = principal_for_key_id(session, key_id=web.key_id) if alive else None
    if principal is None:
        return None
    learn_tenant(request.app.state, f"cookie:{request.cookies.get(COOKIE)}",
                 project_id=principal.project_id)  # fmt: skip
    return web, principal


def end_login(request: Request, web: WebSession) -> None:
    """Logout: the cookie stops working everywhere at once, not when it expires."""
    with request.app.state.sessionmaker() as session:
        session.execute(
            delete(WebSessionRow).where(WebSessionRow.nonce_hash == _nonce_hash(web.nonce))
        )
        session.commit()


_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def cookie_principal(request: Request) -> Principal | None:
    """The web UI's session cookie, for the UI's own calls to the JSON API.

    A cookie is sent by the browser on its own, so unsafe methods also need the session's
    CSRF token in ``X-CSRF-Token``.
    """
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
