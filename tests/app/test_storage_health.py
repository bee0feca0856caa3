"""A full disk: writes answer 503 saying why, /readyz turns not-ready, and both recover
on their own once space is back (SQLite's real SQLITE_FULL via ``max_page_count``)."""

from __future__ import annotations

from typing import Any

import psycopg.errors
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlalchemy.exc import OperationalError

from app.main import create_app
from app.settings import Settings
from app.storage_health import storage_failure
from tests.conftest import auth


def _batch(prefix: str, n: int = 400) -> dict[str, Any]:
    return {"events": [
        {"id": f"{prefix}{i}", "type": "span",
         "body": {"trace_id": f"{prefix}-t{i // 20}", "span_id": f"s{i}", "name": "x" * 200}}
        for i in range(n)
    ]}  # fmt: skip


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_full_disk_is_reported_and_recovers(settings: Settings, make_key: Any) -> None:
    key = make_key("ingest")
    with TestClient(create_app(settings, start_background=False)) as c:
        engine = c.app.state.engine  # type: ignore[attr-defined]

        def no_growth(dbapi_conn: Any, _record: Any) -> None:
            pages = dbapi_conn.execute("PRAGMA page_count").fetchone()[0]
            dbapi_conn.execute(f"PRAGMA max_page_count = {pages}")

        event.listen(engine, "connect", no_growth)
        engine.dispose()
        r = c.post("/api/v1/ingest", json=_batch("a"), headers=auth(key))
        assert r.status_code == 503, r.text
        assert "disk full" in r.json()["detail"] and r.headers["retry-after"] == "60"
        ready = c.get("/readyz")
        assert ready.status_code == 503 and "disk full" in ready.json()["reason"]

        event.remove(engine, "connect", no_growth)
        engine.dispose()
        c.app.state.storage_health.hold_s = 0  # type: ignore[attr-defined]
        assert c.get("/readyz").status_code == 200
        r = c.post("/api/v1/ingest", json=_batch("a"), headers=auth(key))
        assert r.status_code == 200 and r.json()["accepted"] == 400


def test_postgresql_disk_full_and_other_errors_are_told_apart() -> None:
    full = OperationalError("INSERT", {}, psycopg.errors.DiskFull("could not extend file"))
    assert storage_failure(full) == "disk full (could not extend file)"
    down = OperationalError("SELECT 1", {}, psycopg.OperationalError("connection refused"))
    assert storage_failure(down) is None
