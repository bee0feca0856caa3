"""Shared fixtures: an empty database per test on SQLite and on PostgreSQL, apps, keys.

Each test session (each pytest-xdist worker) migrates one template database per backend
once. On PostgreSQL it then keeps one working database, a copy of the template, and empties
it before each test: creating and dropping a database per test cost ~2 s (``DROP DATABASE``
checkpoints) around ~0.1 s of work; emptying it costs ~5 ms (:meth:`PgDatabases.reset_work`). A test whose schema changes (a partition made or dropped) is noticed by a
catalog fingerprint and the working database is copied from the template again. On SQLite
every test gets its own copy of the template file (a file copy is cheaper than deleting).
A test that needs a second database at the same time gets a copy of its own
(:func:`fresh_database`), and migration tests get an empty one (:func:`empty_database`).
Database names carry a per-session id, so several test sessions can share the server.
PostgreSQL is required: a missing server is an error, not a skip.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import uvicorn
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app import migrate
from app.db import make_engine, make_sessionmaker
from app.keys import create_key
from app.main import create_app
from app.settings import Settings
from bench.fake_judge import JudgeServer

PG_ADMIN_DSN = os.environ.get("TELLTALE_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
_RUN = uuid.uuid4().hex[:8] + os.environ.get("PYTEST_XDIST_WORKER", "").replace("gw", "_")
_counter = iter(range(1_000_000))


def _pg_dsn(dbname: str) -> str:
    return f"{PG_ADMIN_DSN.rsplit('/', 1)[0]}/{dbname}"


def _pg_url(dbname: str) -> str:
    return "postgresql+psycopg://" + _pg_dsn(dbname).split("://", 1)[1]


def _pg_exec(sql: str, *params: Any) -> None:
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        conn.execute(sql, params or None)


def _pg_drop(name: str) -> None:
    _pg_exec(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _pg_create(name: str, template: str | None = None) -> None:
    """A test database whose commits do not wait for the WAL flush.

    ``synchronous_commit = off`` changes nothing another connection or a killed client can
    see (a commit is as visible and as atomic; only a crash of the server's own machine
    could lose the last ~0.2 s); it takes each test's fsyncs off the shared disk.
    """
    _pg_exec(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
    _pg_exec(f"ALTER DATABASE {name} SET synchronous_commit = off")


# Everything a test could add to or take from the schema: relations (tables, partitions,
# indexes, sequences, views), columns, functions, triggers, schemas, types.
_FINGERPRINT = """
WITH user_ns AS (
    SELECT oid, nspname FROM pg_namespace
    WHERE nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
      AND nspname NOT LIKE 'pg\\_temp\\_%' AND nspname NOT LIKE 'pg\\_toast\\_temp\\_%'
)
SELECT md5(coalesce(string_agg(x, ',' ORDER BY x), '')) FROM (
    SELECT 'n:' || nspname AS x FROM user_ns
    UNION ALL SELECT 'r:' || n.nspname || '.' || c.relname || ':' || c.relkind::text
        FROM pg_class c JOIN user_ns n ON n.oid = c.relnamespace
    UNION ALL SELECT 'a:' || c.relname || '.' || a.attname || ':' || a.atttypid::text
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        JOIN user_ns n ON n.oid = c.relnamespace
        WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p', 'v')
    UNION ALL SELECT 'f:' || n.nspname || '.' || p.proname
        FROM pg_proc p JOIN user_ns n ON n.oid = p.pronamespace
    UNION ALL SELECT 't:' || t.tgname FROM pg_trigger t WHERE NOT t.tgisinternal
    UNION ALL SELECT 'y:' || n.nspname || '.' || t.typname
        FROM pg_type t JOIN user_ns n ON n.oid = t.typnamespace
) AS catalog
"""

# The tables a reset empties: every table but the migrations' own, partitions through
# their parents (a partition cannot be truncated apart from a parent's foreign keys).
_TABLES = """
SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
  AND c.relname <> 'alembic_version'
ORDER BY 1
"""
# From this many rows a table is truncated rather than deleted from.
_MANY_ROWS = 5000


class PgDatabases:
    """This session's PostgreSQL databases: the template, the working copy, the empty one.

    The working copy and the empty database are lent to one test at a time; a test that
    asks for a second one while holding the first gets a new database of its own, created
    and dropped around it as before (slow, ~2 s, but rare).
    """

    def __init__(self, template: str) -> None:
        self.template = template
        self.work = f"tt_{_RUN}_w"
        self.empty = f"tt_{_RUN}_e"
        self._work_conn: psycopg.Connection[Any] | None = None
        self._empty_made = False
        self._lent: set[str] = set()
        self._pristine = ""
        self._tables: list[str] = []
        self._rows_query = ""
        self._last = ""
        self.resets = 0
        self.copies: list[str] = []  # the tests after which the template was copied again

    # -- the working copy -------------------------------------------------------------

    def _connect_work(self) -> psycopg.Connection[Any]:
        if self._work_conn is None or self._work_conn.closed:
            conn = psycopg.connect(_pg_dsn(self.work), autocommit=True)
            # Behind a lock some leftover holds, give up and copy the template again.
            conn.execute("SET lock_timeout = '5s'")
            self._work_conn = conn
        return self._work_conn

    def _copy_template(self) -> None:
        if self._work_conn is not None:
            self._work_conn.close()
            self._work_conn = None
        _pg_drop(self.work)
        _pg_create(self.work, self.template)
        conn = self._connect_work()
        self._pristine = str(conn.execute(_FINGERPRINT).fetchone()[0])  # type: ignore[index]
        self._tables = [r[0] for r in conn.execute(_TABLES).fetchall()]
        # One round trip finds which tables hold rows, and whether more than a few.
        self._rows_query = " UNION ALL ".join(
            f"SELECT '{t}', (SELECT count(*) FROM (SELECT FROM {t} LIMIT {_MANY_ROWS}) AS r)"
            f" WHERE EXISTS (SELECT FROM {t})"
            for t in self._tables
        )

    def reset_work(self, nodeid: str) -> None:
        """Empty the working copy: no rows, sequences restarted, the template's schema."""
        self.resets += 1
        if not self._pristine:
            self._copy_template()
            self._last = nodeid
            return
        conn = self._connect_work()
        try:
            # What the previous test left connected (a server thread, a leaked pool) goes,
            # as DROP DATABASE .. WITH (FORCE) made it go before.
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            if conn.execute(_FINGERPRINT).fetchone()[0] != self._pristine:  # type: ignore[index]
                self.copies.append(f"{self._last} changed the schema")
                self._copy_template()
                return
            held = conn.execute(self._rows_query).fetchall()
            used = conn.execute(
                "SELECT format('%I.%I', schemaname, sequencename) FROM pg_sequences"
                " WHERE last_value IS NOT NULL"
            ).fetchall()
            with conn.transaction():
                # DELETE, not TRUNCATE, for a test's few rows: TRUNCATE makes new files for
                # each table and index it reaches, and a CASCADE from ``projects`` reaches
                # nearly all of them (~250 ms against ~5 ms). Foreign keys are not checked
                # while every table is emptied anyway (``replica`` skips their triggers).
                conn.execute("SET LOCAL session_replication_role = replica")
                if big := [table for table, rows in held if rows >= _MANY_ROWS]:
                    conn.execute(f"TRUNCATE {', '.join(big)} CASCADE")
                for table, rows in held:
                    if rows < _MANY_ROWS:
                        conn.execute(f"DELETE FROM {table}")
                for (seq,) in used:  # what RESTART IDENTITY did: ids start at 1 again
                    conn.execute(f"ALTER SEQUENCE {seq} RESTART")
        except psycopg.errors.LockNotAvailable:
            self.copies.append(f"{self._last} left a lock held")
            self._copy_template()
        finally:
            self._last = nodeid

    # -- the empty database --------------------------------------------------------------

    def reset_empty(self) -> None:
        """No schema at all: ``public`` dropped and made again, other schemas dropped."""
        if not self._empty_made:
            _pg_create(self.empty)
            self._empty_made = True
            return
        with psycopg.connect(_pg_dsn(self.empty), autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            schemas = conn.execute(
                "SELECT nspname FROM pg_namespace WHERE nspname NOT IN"
                " ('pg_catalog', 'information_schema', 'pg_toast') AND nspname NOT LIKE 'pg\\_%'"
            ).fetchall()
            with conn.transaction():
                for (schema,) in schemas:
                    conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
                conn.execute("CREATE SCHEMA public AUTHORIZATION pg_database_owner")
                conn.execute("GRANT USAGE ON SCHEMA public TO PUBLIC")

    # -- lending -----------------------------------------------------------------------

    def lend(self, which: str, request: pytest.FixtureRequest) -> str | None:
        """The shared database ``which`` reset for this test, or None when it is lent."""
        if which in self._lent:
            return None
        if which == "work":
            self.reset_work(request.node.nodeid)
        else:
            self.reset_empty()
        self._lent.add(which)
        request.addfinalizer(lambda: self._lent.discard(which))
        return self.work if which == "work" else self.empty

    def close(self) -> None:
        if self._work_conn is not None:
            self._work_conn.close()
        _pg_drop(self.work)
        _pg_drop(self.empty)


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    try:
        _pg_exec("SELECT 1")
    except psycopg.OperationalError as exc:
        pytest.fail(f"PostgreSQL is required for the test suite and is not reachable: {exc}")
    name = f"tt_tmpl_{_RUN}"
    _pg_create(name)
    migrate.upgrade(_pg_url(name))
    yield name
    _pg_drop(name)


_pg_databases: list[PgDatabases] = []


@pytest.fixture(scope="session")
def pg_databases(pg_template: str) -> Iterator[PgDatabases]:
    databases = PgDatabases(pg_template)
    _pg_databases.append(databases)
    yield databases
    databases.close()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for databases in _pg_databases:  # one per session; under xdist, workers do not report
        terminalreporter.write_line(
            f"PostgreSQL working database: emptied {databases.resets} times,"
            f" copied from the template again {len(databases.copies)} times"
        )
        for why in databases.copies:
            terminalreporter.write_line(f"  copied again: {why}")


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tmpl") / "template.db"
    migrate.upgrade(f"sqlite:///{path}")
    return path


def fresh_database(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A database at the migrations' head with no rows, for this test alone.

    On PostgreSQL, the session's working database emptied, or, when this test already holds
    it, a new copy of the template dropped when the test ends.
    """
    if backend == "sqlite":
        path = tmp_path / f"t{next(_counter)}.db"
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        return f"sqlite:///{path}"
    databases: PgDatabases = request.getfixturevalue("pg_databases")
    if (name := databases.lend("work", request)) is not None:
        return _pg_url(name)
    name = f"tt_{_RUN}_{next(_counter)}"
    _pg_create(name, databases.template)
    request.addfinalizer(lambda: _pg_drop(name))
    return _pg_url(name)


def empty_database(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A database with no schema at all (for migration tests)."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / f'empty{next(_counter)}.db'}"
    databases: PgDatabases = request.getfixturevalue("pg_databases")
    if (name := databases.lend("empty", request)) is not None:
        return _pg_url(name)
    name = f"tt_{_RUN}_e{next(_counter)}"
    _pg_create(name)
    request.addfinalizer(lambda: _pg_drop(name))
    return _pg_url(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# For a test that never reaches the database's own behaviour (a 422 at parameter parsing,
# a limit checked before anything is stored): it runs once, on SQLite.
sqlite_only = pytest.mark.parametrize("backend", ["sqlite"])


@pytest.fixture
def db_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    return fresh_database(backend, tmp_path, request)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=db_url,
        scheduler_enabled=False,
        media_dir=str(tmp_path / "media"),
        # Test receivers listen on loopback, which production refuses (docs: alert-routing).
        outbound_allow=["127.0.0.1/32"],
    )


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    """The app in-process (ASGI), lifespan run, background services off."""
    with TestClient(create_app(settings, start_background=False)) as c:
        yield c


KeyMaker = Callable[..., str]


def key_for(db_url: str, role: str, project: str = "p1") -> str:
    """A plaintext key in any database (for tests that make their own database)."""
    eng = make_engine(db_url)
    try:
        with make_sessionmaker(eng)() as session:
            key = create_key(session, project_name=project, role=role)
            session.commit()
    finally:
        eng.dispose()
    return key


@pytest.fixture
def make_key(db_url: str) -> Iterator[KeyMaker]:
    """``make_key(role="admin", project="p1")`` -> a plaintext key for that project."""
    eng = make_engine(db_url)
    sm = make_sessionmaker(eng)

    def make(role: str = "admin", project: str = "p1") -> str:
        with sm() as session:
            key = create_key(session, project_name=project, role=role)
            session.commit()
        return key

    yield make
    eng.dispose()


@pytest.fixture
def judge() -> Iterator[JudgeServer]:
    """A loopback OpenAI-compatible judge (bench/fake_judge.py) for online evaluators."""
    server = JudgeServer()
    yield server
    server.close()


@pytest.fixture
def judge_settings(settings: Settings) -> Settings:
    """``settings`` whose judge endpoints may be on loopback (TELLTALE_JUDGE_ALLOW)."""
    return settings.model_copy(update={"judge_allow": ["127.0.0.1/32"]})


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """uvicorn serving the app on 127.0.0.1 in a thread: real sockets, real HTTP."""

    def __init__(self, app: Any) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("live server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)


@pytest.fixture
def live_server(settings: Settings) -> Iterator[LiveServer]:
    with LiveServer(create_app(settings, start_background=False)) as server:
        yield server
