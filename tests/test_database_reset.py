"""The test database is reset between tests (tests/conftest.py): a test that writes rows
everywhere it can is followed by one that finds every table empty and ids starting at 1.

The two tests run in this order by default; in random order (pytest-randomly) the second
still checks whatever the tests before it left."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine, func, insert, inspect, select, text

from app.models import Base, Project
from app.models.base import utcnow
from app.retention.partitions import create_partition
from tests.app.engine_helpers import add_monitor, setup_project
from tests.app.test_ingest import trace_batch
from tests.conftest import PgDatabases, auth


def test_a_test_that_writes_everywhere(client, make_key, engine: Engine, backend: str) -> None:
    key = make_key("admin")
    r = client.post("/api/v1/ingest", json={"events": trace_batch()}, headers=auth(key))
    assert r.status_code == 200 and r.json()["accepted"] > 0, r.text
    assert client.post("/api/v1/monitors/defaults", headers=auth(key)).status_code == 201
    add_monitor(engine, setup_project(engine, "p2"), "FM-2")
    with engine.connect() as conn:  # an id used by a row that never lands
        conn.execute(insert(Project).values(name="rolled back", created_at=utcnow()))
        conn.rollback()
    filled = [t.name for t in Base.metadata.sorted_tables if _rows(engine, t.name)]
    assert {"projects", "api_keys", "traces", "spans", "monitors"} <= set(filled)


def test_the_next_test_sees_empty_tables(engine: Engine, backend: str) -> None:
    tables = [t.name for t in Base.metadata.sorted_tables]
    assert set(tables) <= set(inspect(engine).get_table_names())
    assert {t: n for t in tables if (n := _rows(engine, t))} == {}
    assert setup_project(engine, "first") == 1


def test_a_changed_schema_is_copied_again_from_the_template(
    pg_databases: PgDatabases, db_url: str, engine: Engine, backend: str
) -> None:
    if backend == "sqlite":  # a file copy per test: nothing is shared to reset
        return
    assert db_url.endswith(f"/{pg_databases.work}")
    with engine.begin() as conn:
        create_partition(conn, "spans", (utcnow() - timedelta(days=400)).date())
        conn.execute(text("CREATE TABLE leftover (x int)"))
    before = len(pg_databases.copies)
    pg_databases.reset_work("this test")
    assert len(pg_databases.copies) == before + 1
    engine.dispose()
    assert "leftover" not in inspect(engine).get_table_names()


def _rows(engine: Engine, table: str) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(select(func.count()).select_from(text(table))) or 0)
