"""HMAC-SHA256 signatures of webhook bodies: ``X-Telltale-Signature: sha256=<hex>``.

The signature covers the raw bytes of the body exactly as sent, so a receiver must verify
before parsing the JSON. Comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "X-Telltale-Signature"


def sign(secret: str, body: bytes) -> str:
    """The header value for ``body`` signed with ``secret``.

    >>> sign("s3cret", b'{"a":1}')
    'sha256=5910e62016ef5034272c926c27071992a465c2335cecf41851bda071577f4f6d'
    """
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify(secret: str, body: bytes, header: str | None) -> bool:
    """True when ``header`` is the signature of ``body`` under ``secret``.

    >>> verify("k", b"x", sign("k", b"x")), verify("k", b"y", sign("k", b"x"))
    (True, False)
    """
    if not header:
        return False
    return hmac.compare_digest(sign(secret, body), header.strip())
