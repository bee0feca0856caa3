"""Security headers on every answer: a strict Content-Security-Policy and no framing.

The pages load only their own vendored scripts and styles (no CDN, no inline script or
style attribute), so ``'self'`` is the whole policy; ``frame-ancestors 'none'`` and
``X-Frame-Options`` stop click-jacking of the ack/silence buttons. Every answer but the
vendored assets under ``/static/`` is ``Cache-Control: no-store``: pages and API answers hold
one project's prompts, alerts and, in ``POST /api/v1/keys``, a new key, which no browser or
proxy cache may keep (a route may set its own ``Cache-Control``). A raw ASGI middleware,
not ``@app.middleware``, so the ingest hot path pays one header append, not a task switch.
"""

from __future__ import annotations

from typing import Any

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]
NO_STORE = (b"cache-control", b"no-store")


class SecurityHeaders:
    """Adds :data:`HEADERS` to every HTTP response of the wrapped app."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        extra = HEADERS if scope["path"].startswith("/static/") else [*HEADERS, NO_STORE]

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                message["headers"] = headers + [h for h in extra if h[0] not in present]
            await send(message)

        await self.app(scope, receive, with_headers)
