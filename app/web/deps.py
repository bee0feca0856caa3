"""What every page needs: the logged-in principal (or a redirect to /login) and templates.

The pages enforce the API's roles: every page reads a project's data, so it needs a key
that may ``read`` (annotate and admin imply it). An ``ingest`` key cannot log in, and a
session whose key is one (made before this rule) gets a 403 page saying why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, HTTPException, Request
from fastapi.templating import Jinja2Templates
from sqlalchemy.exc import SQLAlchemyError

from app.auth.cookies import csrf_ok, csrf_token
from app.auth.logins import current_login, session_secret
from app.keys import Principal
from app.web.evidence_view import time_words

# Templates and static assets ship inside the package, so an installed wheel finds them.
WEB_DIR = Path(__file__).resolve().parent
STATIC_DIR = WEB_DIR / "static"
templates = Jinja2Templates(directory=str(WEB_DIR / "templates"))


def every(seconds: int | float) -> str:
    """A monitor's interval the way the pages write durations: ``15 min``, ``1 h``, ``90 s``.

    >>> [every(s) for s in (900, 300, 3600, 5400, 90)]
    ['15 min', '5 min', '1 h', '90 min', '90 s']
    """
    s = int(seconds)
    if s % 3600 == 0:
        return f"{s // 3600} h"
    if s % 60 == 0:
        return f"{s // 60} min"
    return f"{s} s"


templates.env.filters["every"] = every
# An ISO time from stored evidence as the pages write times (``2026-03-02 09:15 UTC``).
templates.env.filters["when"] = lambda v: (time_words(v) or v) if isinstance(v, str) else v
PAGE_ROLE = "read"
INGEST_ONLY = (
    "This key can only send data (role 'ingest'); the pages show a project's data, "
    "so they need a key with the read, annotate or admin role."
)


class LoginRequired(Exception):
    def __init__(self, next_url: str) -> None:
        super().__init__("login required")
        self.next_url = next_url


class WebContext:
    """The principal plus what templates need (CSRF token, role checks)."""

    def __init__(self, request: Request, principal: Principal, nonce: str) -> None:
        self._nonce = nonce
        self.request = request
        self.principal = principal
        self.csrf = csrf_token(session_secret(request), nonce)

    def check_form(self, token: str, *, role: str) -> None:
        """A page's form may act: its CSRF token is this login's and the key has ``role``
        (the API's roles; a 403 page says which is missing)."""
        if not csrf_ok(session_secret(self.request), self._nonce, token):
            raise HTTPException(
                403,
                "csrf: the form expired or did not come from this site; reload the page and try again",
            )
        if not self.principal.can(role):
            raise HTTPException(
                403, f"This needs a key with the {role} role; yours is {self.principal.role}."
            )

    def render(self, template: str, status_code: int = 200, **context: Any) -> Any:
        return templates.TemplateResponse(
            self.request,
            template,
            {"user": self.principal, "csrf": self.csrf, **context},
            status_code=status_code,
        )


def web_context(request: Request) -> WebContext:
    login = current_login(request)
    if login is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise LoginRequired(quote(target, safe="/?=&"))
    web, principal = login
    if not principal.can(PAGE_ROLE):
        raise HTTPException(403, INGEST_ONLY)
    return WebContext(request, principal, web.nonce)


WebDep = Annotated[WebContext, Depends(web_context)]


def error_page_user(request: Request) -> dict[str, Any]:
    """``user`` and ``csrf`` for an error page: a logged-in reader keeps the navigation (a
    404 is where a person most needs a way back); anyone else gets the bare page."""
    try:
        login = current_login(request)
    except SQLAlchemyError:  # the error being shown may be the database's own
        login = None
    if login is None or not login[1].can(PAGE_ROLE):
        return {"user": None, "csrf": ""}
    web, principal = login
    return {"user": principal, "csrf": csrf_token(session_secret(request), web.nonce)}
