"""Findings: the runs that fired, newest first."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from app.api.deps import Int4Id, Int8Id, ReadKey, SessionDep
from app.domain import FailureMode
from app.models.base import UTCTime
from app.monitors import store
from app.monitors.schemas import FindingOut, FindingPage

router = APIRouter(prefix="/api/v1/findings", tags=["findings"])


class FindingFilters(BaseModel):
    """The findings list's query parameters, each narrowing the list when given."""

    failure_mode: FailureMode | None = None
    monitor_id: Int4Id | None = None
    since: UTCTime | None = Field(None, description="at >= since (ISO-8601)")
    until: UTCTime | None = Field(None, description="at < until (ISO-8601)")
    limit: int = Field(100, ge=1, le=1000)
    cursor: Int8Id | None = Field(None, description="next_cursor of the previous page")


@router.get("")
def list_findings(
    principal: ReadKey, session: SessionDep, filters: Annotated[FindingFilters, Query()]
) -> FindingPage:
    page = store.list_findings(session, project_id=principal.project_id, **filters.model_dump())
    return FindingPage(
        findings=[FindingOut.model_validate(f) for f in page.rows], next_cursor=page.next_cursor
    )
