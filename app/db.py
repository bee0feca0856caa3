"""Engine and session factory for SQLite (embedded, WAL) and PostgreSQL (psycopg 3)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

import orjson
from sqlalchemy import Connection, Engine, Row, Select, any_, bindparam, create_engine, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from app.private_files import create_sqlite_file


def normalise_url(url: str) -> str:
    """Accept plain ``postgresql://`` URLs and pick the psycopg 3 driver for them."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def _sqlite_pragmas(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
    # WAL lets readers run beside the single writer; busy_timeout makes a second writer
    # wait for the lock instead of failing at once; NORMAL sync is durable under WAL
    # against process crashes (fsync at checkpoints), which is what the embedded mode needs.
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def is_memory(url: str) -> bool:
    """An in-memory SQLite database: one connection, so one engine per process can reach it."""
    return normalise_url(url) in ("sqlite://", "sqlite:///:memory:")


def make_engine(url: str, *, pool_size: int = 8, pool_timeout: float = 30.0) -> Engine:
    """An engine whose pool holds ``pool_size`` connections (and as many more at a peak).

    Sized by the caller for what it admits at once (:mod:`app.api.read_admission`); SQLite
    file databases get the same pool, as its default of 5 + 10 was below the request threads.
    """
    url = normalise_url(url)
    if url.startswith("sqlite"):
        # An in-memory database is one connection every thread shares (StaticPool). The
        # default for it, SingletonThreadPool, gives each thread its own empty database
        # and closes other threads' connections past five threads, while they are in use:
        # the app's background threads crashed the process in sqlite3 (a test's segfault).
        memory = url in ("sqlite://", "sqlite:///:memory:")
        create_sqlite_file(url)  # 0600 before SQLite creates it 0644 (app.private_files)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 30},
            pool_pre_ping=True,
            json_deserializer=orjson.loads,
            **(
                {"poolclass": StaticPool}
                if memory
                else {
                    "pool_size": pool_size,
                    "max_overflow": pool_size,
                    "pool_timeout": pool_timeout,
                }
            ),
        )
        event.listen(engine, "connect", _sqlite_pragmas)

        # Let SQLAlchemy, not pysqlite, emit BEGIN, so BEGIN IMMEDIATE can be used for
        # writes that read-then-write (claiming, idempotency checks).
        @event.listens_for(engine, "connect")
        def _no_autobegin(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
            dbapi_conn.isolation_level = None

        @event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:
            mode = conn.info.get("sqlite_begin", "BEGIN")
            conn.exec_driver_sql(mode)

        return engine
    # orjson reads the JSON columns (span and trace attributes) about 3x faster than the
    # json module: loading a monitor window decodes one attributes map per span.
    return create_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_timeout=pool_timeout,
        pool_pre_ping=True,
        pool_recycle=1800,
        json_deserializer=orjson.loads,
    )


R = TypeVar("R")


def project_row(session: Session, model: type[R], row_id: int, *, project_id: int) -> R | None:
    """Row ``row_id`` of ``model`` when it belongs to ``project_id``, else None.

    Another project's row answers like a missing one, so ids reveal nothing across projects.
    """
    row = session.get(model, row_id)
    return row if row is not None and getattr(row, "project_id", None) == project_id else None


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Any]:
    """A connection in a write transaction; on SQLite it takes the write lock up front.

    ``BEGIN IMMEDIATE`` avoids the deadlock where two readers both try to upgrade to a
    writer (SQLITE_BUSY mid-transaction), which is what makes read-then-write safe there.
    """
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            conn.info["sqlite_begin"] = "BEGIN IMMEDIATE"
        try:
            with conn.begin():
                yield conn
        finally:
            conn.info.pop("sqlite_begin", None)


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """An ORM session inside one write transaction (``BEGIN IMMEDIATE`` on SQLite).

    Read-then-write logic (alert dedup, outbox claims) needs the write lock up front on
    SQLite; on PostgreSQL it is a plain transaction. Commits when the block ends.
    """
    with write_transaction(engine) as conn:
        session = Session(bind=conn, expire_on_commit=False, autoflush=True)
        try:
            yield session
            session.flush()
        finally:
            session.close()


def claim_rows(bind: Connection | Session, pick: Select[Any], *, of: Any = None) -> list[Row[Any]]:
    """The rows ``pick`` selects, held by this lease claim until its transaction ends.

    A lease claim (media jobs, labeling queue items, the outbox) picks due rows, then
    leases them in the same write transaction. On PostgreSQL the pick is ``FOR UPDATE SKIP
    LOCKED``: concurrent claimers lock disjoint rows and never wait on each other. On SQLite
    the ``BEGIN IMMEDIATE`` of :func:`write_transaction` (or :func:`write_session`) took the
    single writer lock before the read, so claims serialise. Either way a row has one live
    lease. ``of`` restricts the lock to one table when ``pick`` joins others.
    """
    conn = bind.connection() if isinstance(bind, Session) else bind
    if conn.dialect.name == "postgresql":
        pick = pick.with_for_update(skip_locked=True, of=of)
    elif conn.info.get("sqlite_begin") != "BEGIN IMMEDIATE":
        raise RuntimeError("claim_rows must run inside write_transaction or write_session")
    return list(bind.execute(pick).all())


def as_utc(value: datetime) -> datetime:
    """``value`` in UTC, naive taken as UTC (as :class:`UTCDateTime` stores it).

    An offset can push a time past ``datetime``'s years 1-9999 (``0001-01-01T00:00+01:00``);
    that is a ``ValueError`` here, at the door, rather than an ``OverflowError`` when the
    value is bound to a query.
    """
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("is outside the years 1-9999 once converted to UTC") from None


def one_of(column: Any, values: list[Any], dialect: str) -> Any:
    """``column IN (values)``, as one array parameter on PostgreSQL.

    A monitor's window reads its rows by lists of a thousand trace ids. As ``IN`` each list
    is a thousand bound parameters, compiled and split on every query; ``= ANY(:array)`` is
    one parameter and the same statement text each time, so it is compiled once and
    prepared by the server (measured: 3.7 s of a 39 s profiled cycle at 10,000 traces/h
    went to compiling and splitting the ``IN`` lists).
    """
    if dialect != "postgresql":
        return column.in_(values)
    return column == any_(bindparam(None, value=list(values), type_=ARRAY(column.type)))


def one_of_param(column: Any, name: str, dialect: str) -> Any:
    """:func:`one_of` with the list left as the named parameter ``name``, for a statement
    built once and executed with ``{name: [...]}`` (an expanding ``IN`` on SQLite)."""
    if dialect != "postgresql":
        return column.in_(bindparam(name, expanding=True))
    return column == any_(bindparam(name, type_=ARRAY(column.type)))


def dialect_insert(dialect: str, model: Any) -> Any:
    """An INSERT that can say ON CONFLICT on ``dialect`` (PostgreSQL's or SQLite's)."""
    return (postgresql if dialect == "postgresql" else sqlite).insert(model)
