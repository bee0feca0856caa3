"""Login with an API key into a signed session cookie; logout."""

from __future__ import annotations

import secrets
from typing import Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse

from app.auth.cookies import COOKIE, MAX_AGE_S, csrf_ok, csrf_token
from app.auth.logins import current_login, end_login, session_secret, start_login
from app.deps import SessionDep
from app.keys import authenticate
from app.web.deps import INGEST_ONLY, PAGE_ROLE, templates

router = APIRouter(include_in_schema=False)
PRE_COOKIE = "tt_login"


def _safe_next(target: str | None) -> str:
    # Only local paths: "//evil.example" or "https://..." would be an open redirect.
    if not target or not target.startswith("/") or target.startswith("//"):
        return "/"
    return target


@router.get("/login")
def login_form(request: Request, next: str = "/", error: str | None = None) -> Any:
    nonce = request.cookies.get(PRE_COOKIE) or secrets.token_urlsafe(16)
    token = csrf_token(session_secret(request), nonce)
    response = templates.TemplateResponse(
        request,
        "login.html",
        {"next": _safe_next(next), "csrf": token, "error": error, "user": None},
        status_code=401 if error else 200,
    )
    response.set_cookie(PRE_COOKIE, nonce, httponly=True, samesite="strict", max_age=3600)
    return response


@router.post("/login")
def login(
    request: Request,
    session: SessionDep,
    api_key: str = Form(""),
    csrf: str = Form(""),
    next: str = Form("/"),
) -> Any:
    settings = request.app.state.settings
    nonce = request.cookies.get(PRE_COOKIE, "")
    if not nonce or not csrf_ok(session_secret(request), nonce, csrf):
        return login_form(request, next=next, error="The form expired; please try again.")
    principal = authenticate(session, key=api_key.strip())
    if principal is None:
        return login_form(request, next=next, error="That API key is not valid or was revoked.")
    if not principal.can(PAGE_ROLE):
        # Ingest keys sit in every agent's environment: they send data, and the pages
        # would show it back (prompts, alerts), which the API refuses them too.
        return login_form(request, next=next, error=INGEST_ONLY)
    response = RedirectResponse(_safe_next(next), status_code=303)
    response.set_cookie(
        COOKIE,
        start_login(request, key_id=principal.key_id),
        httponly=True,
        samesite="lax",
        secure=settings.public_url.startswith("https://"),
        max_age=MAX_AGE_S,
    )
    response.delete_cookie(PRE_COOKIE)
    return response


@router.post("/logout")
def logout(request: Request, csrf: str = Form("")) -> Any:
    login = current_login(request)
    response = RedirectResponse("/login", status_code=303)
    if login is not None and csrf_ok(session_secret(request), login[0].nonce, csrf):
        end_login(request, login[0])
        response.delete_cookie(COOKIE)
    return response
