"""Signed session cookies and CSRF tokens for the web UI.

The cookie holds only the key's id, an expiry and a random nonce, signed with
HMAC-SHA256 under the installation's session secret (``TELLTALE_SECRET_KEY``, or one
generated on first start: see ``app.auth.logins``); the API key itself never leaves the login
form. The signature alone is not enough: ``app.auth.logins`` also requires the session's row,
which logout deletes, and re-reads the key row, so a revoked key ends its sessions at once. The CSRF
token is an HMAC of the session nonce (synchroniser token): forms carry it in a hidden
field, the UI's fetch calls in an ``X-CSRF-Token`` header.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass

COOKIE = "tt_session"
MAX_AGE_S = 12 * 3600


@dataclass(frozen=True)
class WebSession:
    key_id: int
    nonce: str
    expires: int


def _sign(secret: str, payload: bytes) -> str:
    return hmac.new(secret.encode(), payload, hashlib.sha256).hexdigest()


def _same(expected: str, given: str) -> bool:
    """Constant-time equality of a hex signature and what the client sent.

    ``hmac.compare_digest`` raises ``TypeError`` on a ``str`` with non-ASCII characters, and
    a cookie, header or form field can carry any: comparing UTF-8 bytes makes such a value
    simply unequal (a lone surrogate from a form is replaced, never raised on).
    """
    return hmac.compare_digest(expected.encode(), given.encode("utf-8", "replace"))


def new_session(key_id: int, *, now: float | None = None) -> WebSession:
    now = time.time() if now is None else now
    return WebSession(key_id=key_id, nonce=secrets.token_urlsafe(16), expires=int(now + MAX_AGE_S))


def encode_session(secret: str, web: WebSession) -> str:
    body = {"k": web.key_id, "n": web.nonce, "e": web.expires}
    raw = base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode()
    return f"{raw}.{_sign(secret, raw.encode())}"


def decode_session(
    secret: str, cookie: str | None, *, now: float | None = None
) -> WebSession | None:
    if not cookie or "." not in cookie:
        return None
    raw, sig = cookie.rsplit(".", 1)
    if not _same(_sign(secret, raw.encode("utf-8", "replace")), sig):
        return None
    try:
        body = json.loads(base64.urlsafe_b64decode(raw.encode()))
        session = WebSession(key_id=int(body["k"]), nonce=str(body["n"]), expires=int(body["e"]))
    except (ValueError, KeyError, TypeError):
        return None
    if session.expires < (time.time() if now is None else now):
        return None
    return session


def csrf_token(secret: str, nonce: str) -> str:
    return _sign(secret, f"csrf:{nonce}".encode())


def csrf_ok(secret: str, nonce: str, token: str | None) -> bool:
    return bool(token) and _same(csrf_token(secret, nonce), str(token))
