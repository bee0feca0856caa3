"""The session secret and server-side logins: no public default, short secrets refused,
logout ends the cookie at once, and replicas on one database share the generated secret."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from app.auth.cookies import COOKIE
from app.main import create_app
from app.settings import Settings
from tests.web.test_pages import login

OLD_PUBLIC_DEFAULT = "change-me-local-only"


def _forge(secret: str, key_id: int, nonce: str = "x") -> tuple[str, str]:
    raw = base64.urlsafe_b64encode(
        json.dumps({"k": key_id, "n": nonce, "e": int(time.time()) + 3600}).encode()
    ).decode()
    sign = lambda data: hmac.new(secret.encode(), data, hashlib.sha256).hexdigest()  # noqa: E731
    return f"{raw}.{sign(raw.encode())}", sign(f"csrf:{nonce}".encode())


def test_a_cookie_signed_with_the_old_public_default_is_no_login(
    client: TestClient, make_key: Any
) -> None:
    make_key("admin")  # key id 1 is an admin of p1
    cookie, csrf = _forge(OLD_PUBLIC_DEFAULT, key_id=1)
    client.cookies.set(COOKIE, cookie)
    assert client.get("/api/v1/keys").status_code == 401
    r = client.post("/api/v1/keys", json={"role": "admin"}, headers={"X-CSRF-Token": csrf})
    assert r.status_code == 401
    assert client.get("/traces", follow_redirects=False).status_code == 303


def test_even_a_correctly_signed_cookie_needs_its_server_side_login(
    settings: Settings, make_key: Any
) -> None:
    make_key("admin")
    settings = settings.model_copy(update={"secret_key": _secret("s" * 40)})
    with TestClient(create_app(settings, start_background=False)) as c:
        cookie, _ = _forge("s" * 40, key_id=1)
        c.cookies.set(COOKIE, cookie)
        assert c.get("/api/v1/keys").status_code == 401


def _secret(value: str) -> Any:
    return Settings(secret_key=value).secret_key


@pytest.mark.parametrize("weak", ["", "a", OLD_PUBLIC_DEFAULT, "x" * 31])
def test_short_secrets_are_refused(weak: str) -> None:
    with pytest.raises(ValidationError, match="at least 32 characters"):
        Settings(secret_key=weak)
    assert Settings(secret_key="y" * 32).secret_key is not None


def test_replicas_on_one_database_share_the_generated_secret(
    settings: Settings, make_key: Any
) -> None:
    key = make_key("read")
    with TestClient(create_app(settings, start_background=False)) as a:
        login(a, key)
        cookie = a.cookies[COOKIE]
        secret_a = a.app.state.secret_key  # type: ignore[attr-defined]
    with TestClient(create_app(settings, start_background=False)) as b:
        b.cookies.set(COOKIE, cookie)
        assert b.get("/api/v1/traces").status_code == 200
        assert b.app.state.secret_key == secret_a  # type: ignore[attr-defined]
    assert len(secret_a) >= 48 and secret_a != OLD_PUBLIC_DEFAULT


def test_each_installation_generates_its_own_secret(tmp_path: Any, sqlite_template: Any) -> None:
    import shutil

    secrets = []
    for name in ("one", "two"):
        path = tmp_path / f"{name}.db"
        shutil.copy(sqlite_template, path)
        app = create_app(Settings(database_url=f"sqlite:///{path}", scheduler_enabled=False),
                         start_background=False)  # fmt: skip
        with TestClient(app) as c:
            c.get("/login")
            secrets.append(c.app.state.secret_key)  # type: ignore[attr-defined]
    assert secrets[0] != secrets[1]


def test_logout_ends_the_session_on_the_server(client: TestClient, make_key: Any) -> None:
    login(client, make_key("admin"))
    stolen = client.cookies[COOKIE]
    html = client.get("/").text
    token = re.search(r'name="csrf-token" content="([^"]+)"', html).group(1)  # type: ignore[union-attr]
    r = client.post("/logout", data={"csrf": token}, follow_redirects=False)
    assert r.status_code == 303
    client.cookies.set(COOKIE, stolen)  # the old cookie, replayed
    assert client.get("/api/v1/keys").status_code == 401
    assert client.get("/", follow_redirects=False).status_code == 303


def test_non_ascii_cookie_csrf_header_and_form_fields_are_invalid_not_500(
    client: TestClient, make_key: Any
) -> None:
    # hmac.compare_digest raises TypeError on a non-ASCII str: each of these was a 500.
    odd = "é" * 64
    raw_cookie = f"{COOKIE}=abc.{odd}".encode("latin-1")  # needs no login at all
    r = client.get("/api/v1/keys", headers={"cookie": raw_cookie})
    assert r.status_code == 401
    assert (
        client.get("/", headers={"cookie": raw_cookie}, follow_redirects=False).status_code == 303
    )
    login(client, make_key("admin"))
    r = client.post(
        "/api/v1/keys", json={"role": "read"}, headers={"X-CSRF-Token": odd.encode("latin-1")}
    )
    assert r.status_code == 403 and "X-CSRF-Token" in r.json()["detail"]
    r = client.post("/logout", data={"csrf": odd}, follow_redirects=False)
    assert r.status_code == 303
    assert client.get("/", follow_redirects=False).status_code == 200  # still logged in
    client.cookies.clear()
    page = client.get("/login")
    assert page.status_code == 200
    r = client.post("/login", data={"api_key": "x", "csrf": odd}, follow_redirects=False)
    assert r.status_code == 401 and "expired" in r.text
