"""The app's error handlers: only a database outage is a retryable 503; a value the
database refuses is the client's 4xx, never a 500."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.exc import DataError, IntegrityError, OperationalError

from app.main import create_app
from app.settings import Settings

ERRORS = {
    "operational": OperationalError("SELECT 1", {}, Exception("server closed the connection")),
    "data": DataError("INSERT ..", {}, Exception("text fields cannot contain NUL")),
    "integrity": IntegrityError("INSERT ..", {}, Exception("duplicate key")),
}


@pytest.mark.parametrize(
    ("kind", "status"), [("operational", 503), ("data", 422), ("integrity", 409)]
)
def test_only_an_outage_is_a_503(tmp_path, kind, status):
    app = create_app(
        Settings(database_url=f"sqlite:///{tmp_path / 'x.db'}", scheduler_enabled=False),
        start_background=False,
    )

    @app.get("/boom")
    def boom() -> None:
        raise ERRORS[kind]

    with TestClient(app, raise_server_exceptions=False) as client:
        r = client.get("/boom")
    assert r.status_code == status
    assert ("retry-after" in r.headers) == (status == 503)


def test_a_nul_in_a_json_body_string_is_a_4xx_on_both_databases(client, make_key):
    from tests.conftest import auth

    key = make_key("admin")
    r = client.post("/api/v1/monitors", json={"name": "bad\u0000name", "failure_mode": "FM-2"},
                    headers=auth(key))  # fmt: skip
    assert 400 <= r.status_code < 500, r.text
    assert r.json()["detail"]
