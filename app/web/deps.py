"""What every page needs: the logged-in principal (or a redirect to /login) and templates."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, Request
from fastapi.templating import Jinja2Templates

from app.keys import Principal, principal_for_key_id
from app.web.session import COOKIE, csrf_token, decode_session

DASHBOARDS = Path(__file__).resolve().parent.parent.parent / "dashboards"
templates = Jinja2Templates(directory=str(DASHBOARDS / "templates"))


class LoginRequired(Exception):
    def __init__(self, next_url: str) -> None:
        super().__init__("login required")
        self.next_url = next_url


class WebContext:
    """The principal plus what templates need (CSRF token, role checks)."""

    def __init__(self, request: Request, principal: Principal, nonce: str) -> None:
        self.request = request
        self.principal = principal
        self.csrf = csrf_token(request.app.state.settings.secret_key, nonce)

    def render(self, template: str, status_code: int = 200, **context: Any) -> Any:
        return templates.TemplateResponse(
            self.request,
            template,
            {"user": self.principal, "csrf": self.csrf, **context},
            status_code=status_code,
        )


def web_context(request: Request) -> WebContext:
    settings = request.app.state.settings
    web = decode_session(settings.secret_key, request.cookies.get(COOKIE))
    principal = None
    if web is not None:
        with request.app.state.sessionmaker() as session:
            principal = principal_for_key_id(session, key_id=web.key_id)
    if web is None or principal is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise LoginRequired(quote(target, safe="/?=&"))
    return WebContext(request, principal, web.nonce)


WebDep = Annotated[WebContext, Depends(web_context)]
