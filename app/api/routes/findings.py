"""Findings: the runs that fired, newest first."""

from __future__ import annotations

from fastapi import APIRouter, Query

from app.api.deps import Int4Id, Int8Id, ReadKey, SessionDep
from app.domain import FailureMode
from app.models.base import UTCTime
from app.monitors import store
from app.monitors.schemas import FindingOut, FindingPage

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
) -> FindingPage:
    page = store.list_findings(
        session,
        project_id=principal.project_id,
        failure_mode=failure_mode,
        monitor_id=monitor_id,
        since=since,
        until=until,
        limit=limit,
        cursor=cursor,
    )
    return FindingPage(
        findings=[FindingOut.model_validate(f) for f in page.rows], next_cursor=page.next_cursor
    )
