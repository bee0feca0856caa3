"""Fingerprints, and each project's Drain clusters kept in memory between derive batches.

A fingerprint is computed once, from stable parts (Sentry's rule): agent, span kind, tool,
error type and the message's template id. The id, not the template's text: a template
that widens ("... flight HAT030 ..." → "... flight <ID> ...") keeps its issue.

The derive job is leader-only, so one process mines at a time; the clusters live in this
process between batches (rebuilding them per batch would cost the restore each time) and
are written to ``failure_templates`` in the batch's transaction with a new *revision*.
A cached book whose revision is not the project's newest stored one is stale (a batch
rolled back after mining, or another process led meanwhile) and is rebuilt from the rows.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from app.db import dialect_insert
from app.issues.templates import FailureTemplates
from app.models import FailureTemplate

_lock = threading.Lock()
_books: dict[int, tuple[int, FailureTemplates]] = {}  # project -> (revision, book)


def fingerprint(*, agent: str, span_kind: str, tool: str, error_type: str, template_id: int) -> str:
    """The issue's key: a hash of the parts, so it fits one indexed column.

    >>> len(fingerprint(agent="a", span_kind="tool", tool="t", error_type="E", template_id=1))
    32
    """
    parts = "\x1f".join((agent, span_kind, tool, error_type, str(template_id)))
    return hashlib.sha256(parts.encode()).hexdigest()[:32]


def book_for(conn: Connection, project_id: int) -> tuple[FailureTemplates, int]:
    """The project's clusters and their stored revision, from the cache when current."""
    stored = conn.scalar(
        select(func.max(FailureTemplate.revision)).where(FailureTemplate.project_id == project_id)
    )
    revision = int(stored or 0)
    with _lock:
        cached = _books.get(project_id)
    if cached is not None and cached[0] == revision:
        return cached[1], revision
    rows = conn.execute(
        select(FailureTemplate.template_id, FailureTemplate.template, FailureTemplate.size)
        .where(FailureTemplate.project_id == project_id)
    ).all()  # fmt: skip
    book = FailureTemplates.restore((int(i), str(t), int(n)) for i, t, n in rows)
    with _lock:
        _books[project_id] = (revision, book)
    return book, revision


def save_book(
    conn: Connection, project_id: int, book: FailureTemplates, revision: int
) -> list[tuple[int, str, int]]:
    """Write the clusters created or widened since the last save, under ``revision + 1``
    (the cache takes that revision: if the transaction rolls back, it is stale); returns
    them."""
    changed = book.take_changed()
    if not changed:
        return changed
    new = revision + 1
    _upsert(conn, project_id, new, changed)
    with _lock:
        _books[project_id] = (new, book)
    return changed


def _upsert(conn: Connection, project_id: int, revision: int,
            rows: Iterable[tuple[int, str, int]]) -> None:  # fmt: skip
    values = [
        {"project_id": project_id, "template_id": i, "template": t, "size": n, "revision": revision}
        for i, t, n in rows
    ]
    stmt = dialect_insert(conn.dialect.name, FailureTemplate)
    stmt = stmt.on_conflict_do_update(
        index_elements=["project_id", "template_id"],
        set_={"template": stmt.excluded.template, "size": stmt.excluded.size,
              "revision": stmt.excluded.revision},
    )  # fmt: skip
    conn.execute(stmt, values)


def forget(project_id: int | None = None) -> None:
    """Drop the cached books (one project's, or all): tests, and a project deleted."""
    with _lock:
        if project_id is None:
            _books.clear()
        else:
            _books.pop(project_id, None)
