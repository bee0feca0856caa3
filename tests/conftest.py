"""Shared fixtures: a fresh database per test on SQLite and on PostgreSQL, apps, keys.

Each test session migrates one template database per backend once; every test then gets
its own copy (a file copy on SQLite, ``CREATE DATABASE .. TEMPLATE`` on PostgreSQL), so
tests never see each other's rows and several test sessions can share the server.
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

PG_ADMIN_DSN = os.environ.get("TELLTALE_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
_RUN = uuid.uuid4().hex[:8]
_counter = iter(range(1_000_000))


def _pg_url(dbname: str) -> str:
    base = PG_ADMIN_DSN.rsplit("/", 1)[0].split("://", 1)[1]
    return f"postgresql+psycopg://{base}/{dbname}"


def _pg_exec(sql: str) -> None:
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        conn.execute(sql)


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    try:
        _pg_exec("SELECT 1")
    except psycopg.OperationalError as exc:
        pytest.fail(f"PostgreSQL is required for the test suite and is not reachable: {exc}")
    name = f"tt_tmpl_{_RUN}"
    _pg_exec(f"CREATE DATABASE {name}")
    migrate.upgrade(_pg_url(name))
    yield name
    _pg_exec(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tmpl") / "template.db"
    migrate.upgrade(f"sqlite:///{path}")
    return path


def fresh_database(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A new database at the migrations' head; dropped when the test ends."""
    if backend == "sqlite":
        path = tmp_path / f"t{next(_counter)}.db"
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        return f"sqlite:///{path}"
    template = request.getfixturevalue("pg_template")
    name = f"tt_{_RUN}_{next(_counter)}"
    _pg_exec(f"CREATE DATABASE {name} TEMPLATE {template}")
    request.addfinalizer(lambda: _pg_exec(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    return _pg_url(name)


def empty_database(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A new database with no schema at all (for migration tests)."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / f'empty{next(_counter)}.db'}"
    request.getfixturevalue("pg_template")  # checks the server is there
    name = f"tt_{_RUN}_e{next(_counter)}"
    _pg_exec(f"CREATE DATABASE {name}")
    request.addfinalizer(lambda: _pg_exec(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    return _pg_url(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


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
        # Test receivers listen on loopback, which production refuses (README: Outbound).
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
