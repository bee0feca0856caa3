"""Keyset pagination over an id column, newest first, written once for every listing.

A cursor is the last id of the previous page; ``id < cursor`` stays correct while new
rows arrive (an offset would repeat or skip rows), and reads one row past the page to
know whether another page follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import Select
from sqlalchemy.orm import InstrumentedAttribute, Session

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    rows: list[T]
    next_cursor: str | None


def paginate(
    session: Session,
    query: Select[T],
    *,
    id_column: InstrumentedAttribute[Any],
    limit: int,
    cursor: int | None,
) -> Page[T]:
    """Up to ``limit`` rows of ``query`` with ``id_column < cursor``, by ``id_column`` desc."""
    if cursor is not None:
        query = query.where(id_column < cursor)
    rows = list(session.scalars(query.order_by(id_column.desc()).limit(limit + 1)))
    page = rows[:limit]
    more = len(rows) > limit
    return Page(page, str(getattr(page[-1], id_column.key)) if more else None)


def where_given(query: Select[Any], *filters: tuple[Any, Any, Any]) -> Select[Any]:
    """``query`` narrowed by each ``(column, operator, value)`` whose value was given.

    List routes take optional filters; this keeps each store's query one readable list
    instead of an ``if x is not None`` chain per parameter, e.g.
    ``where_given(q, (Trace.agent, eq, agent), (Trace.started_at, ge, since))``.
    """
    for column, op, value in filters:
        if value is not None:
            query = query.where(op(column, value))
    return query
