"""Queries of the feedback API."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Trace


def stored_trace_ids(session: Session, *, project_id: int, trace_ids: Iterable[str]) -> set[str]:
    """Which of ``trace_ids`` the project has stored (one indexed lookup per 1,000 ids)."""
    wanted = sorted(set(trace_ids))
    found: set[str] = set()
    for i in range(0, len(wanted), 1000):
        found.update(
            session.scalars(
                select(Trace.trace_id).where(
                    Trace.project_id == project_id, Trace.trace_id.in_(wanted[i : i + 1000])
                )
            )
        )
    return found
