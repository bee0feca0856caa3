"""Whether the database can still store writes, for ``/readyz`` and for honest errors.

A full disk (SQLite ``database or disk is full``, PostgreSQL SQLSTATE 53100) or a database
that turned read-only fails every write while reads, and so ``SELECT 1``, still work. Such a
failure is not a blip a client should retry in five seconds: it lasts until an operator
frees space. The engine's ``handle_error`` hook records it from any writer in the process
(ingest, scheduler, outbox), and ``/readyz`` reports not-ready, with the reason, until a
probe write succeeds after ``hold_s`` without a new failure.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from sqlalchemy import Engine, event

# PostgreSQL: disk_full, io_error; out_of_memory is left out (it passes by itself).
_PG_STORAGE_SQLSTATES = {"53100": "disk full", "58030": "I/O error"}
_SQLITE_STORAGE_MESSAGES = {
    "database or disk is full": "disk full",
    "disk i/o error": "I/O error",
    "attempt to write a readonly database": "database is read-only",
}


def storage_failure(exc: BaseException) -> str | None:
    """Why ``exc`` means the database cannot store data, or None for any other error.

    >>> import sqlite3
    >>> storage_failure(sqlite3.OperationalError("database or disk is full"))
    'disk full (database or disk is full)'
    >>> storage_failure(sqlite3.OperationalError("database is locked")) is None
    True
    """
    orig = getattr(exc, "orig", None) or exc
    sqlstate = getattr(orig, "sqlstate", None)
    message = str(orig).strip().splitlines()[0][:200] if str(orig).strip() else ""
    if sqlstate in _PG_STORAGE_SQLSTATES:
        return f"{_PG_STORAGE_SQLSTATES[sqlstate]} ({message})"
    lowered = message.lower()
    for needle, reason in _SQLITE_STORAGE_MESSAGES.items():
        if needle in lowered:
            return f"{reason} ({message})"
    if "no space left on device" in lowered:
        return f"disk full ({message})"
    return None


PROBE = "readyz-probe"  # the row the probe write replaces


class StorageHealth:
    """The last storage failure seen on an engine, and a probe that clears it."""

    def __init__(self, engine: Engine, *, hold_s: float = 30.0) -> None:
        self.engine = engine
        self.hold_s = hold_s
        self._lock = threading.Lock()
        self._failure: tuple[float, str] | None = None
        event.listen(engine, "handle_error", self._on_error)

    def watch(self, engine: Engine) -> None:
        """Also record storage failures seen on ``engine`` (the background jobs' engine)."""
        event.listen(engine, "handle_error", self._on_error)

    def _on_error(self, context: Any) -> None:
        reason = storage_failure(context.original_exception)
        if reason is not None:
            self.record(reason)

    def record(self, reason: str) -> None:
        with self._lock:
            self._failure = (time.monotonic(), reason)

    def problem(self) -> str | None:
        """None when writes work; otherwise why they do not (may run one probe write)."""
        with self._lock:
            failure = self._failure
        if failure is None:
            return None
        at, reason = failure
        if time.monotonic() - at < self.hold_s:
            return f"database cannot store writes: {reason}"
        try:
            self._probe_write()
        except Exception as exc:  # the probe's own failure was recorded by handle_error
            return f"database cannot store writes: {storage_failure(exc) or type(exc).__name__}"
        with self._lock:
            if self._failure == failure:
                self._failure = None
        return None

    def _probe_write(self) -> None:
        from sqlalchemy import delete, insert

        from app.db import write_transaction
        from app.models import InstallationSecret

        with write_transaction(self.engine) as conn:
            conn.execute(delete(InstallationSecret).where(InstallationSecret.name == PROBE))
            conn.execute(insert(InstallationSecret).values(name=PROBE, value=str(time.time())))
