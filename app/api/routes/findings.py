"""Findings: the runs that fired, newest first."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from sqlalchemy import select

from app.api.deps import Int4Id, Int8Id, ReadKey, SessionDep
from app.domain import FailureMode
from app.models import Finding
from app.models.base import UTCTime
from app.monitors.store import finding_dict

router = APIRouter(prefix="/api/v1/findings", tags=["findings"])


@router.get("")
def list_findings(
    principal: ReadKey,
    session: SessionDep,
    failure_mode: FailureMode | None = None,
    monitor_id: Int4Id | None = None,
    since: UTCTime | None = Query(None, description="at >= since (ISO-8601)"),
    until: UTCTime | None = Query(None, description="at < until (ISO-8601)"),
    limit: int = Query(100, ge=1, le=1000),
    cursor: Int8Id | None = Query(None, description="next_cursor of the previous page"),
) -> dict[str, Any]:
    q = select(Finding).where(Finding.project_id == principal.project_id)
    if failure_mode is not None:
        q = q.where(Finding.failure_mode == failure_mode)
    if monitor_id is not None:
        q = q.where(Finding.monitor_id == monitor_id)
    if since is not None:
        q = q.where(Finding.at >= since)
    if until is not None:
        q = q.where(Finding.at < until)
    if cursor is not None:
        q = q.where(Finding.id < cursor)
    rows = list(session.scalars(q.order_by(Finding.id.desc()).limit(limit + 1)))
    page = rows[:limit]
    return {
        "findings": [finding_dict(f) for f in page],
        "next_cursor": str(page[-1].id) if len(rows) > limit else None,
    }
