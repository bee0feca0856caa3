"""Reading traces back: a filtered, cursor-paginated list, one trace with its steps, and the
GenAI events of its spans."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, Field

from app.api.deps import Int8Id, ReadKey, SessionDep
from app.ingest.session_ids import MAX_ID_CHARS
from app.models.base import UTCTime
from app.traces import store
from app.traces.schemas import SpanEventsOut, TraceDetail, TraceOut, TracePage, TraceSteps
from app.traces.span_events import span_events_of_trace

router = APIRouter(prefix="/api/v1/traces", tags=["traces"])


class TraceFilters(BaseModel):
    """The trace list's query parameters, each narrowing the list when given."""

    agent: str | None = None
    status: Literal["ok", "error"] | None = None
    source: Literal["production", "eval", "shadow"] | None = None
    since: UTCTime | None = Field(None, description="started_at >= since (ISO-8601)")
    until: UTCTime | None = Field(None, description="started_at < until (ISO-8601)")
    session_id: str | None = Field(None, max_length=MAX_ID_CHARS, description="turns of a session")
    user_id: str | None = Field(None, max_length=MAX_ID_CHARS, description="traces of a user")
    loop: bool | None = Field(None, description="with (true) or without a tool loop")
    tool: str | None = Field(None, max_length=128, description="with a call of this tool")
    model: str | None = Field(None, max_length=128, description="with a call of this model")
    limit: int = Field(50, ge=1, le=500)
    cursor: Int8Id | None = Field(None, description="next_cursor of the previous page")


@router.get("")
def list_traces(
    principal: ReadKey, session: SessionDep, filters: Annotated[TraceFilters, Query()]
) -> TracePage:
    """Newest first. Pass ``next_cursor`` back as ``cursor`` for the next page."""
    narrowed = filters.model_dump(exclude={"limit", "cursor"})
    filtered = store.filtered(project_id=principal.project_id, **narrowed)
    page = store.list_traces(session, filtered, limit=filters.limit, cursor=filters.cursor)
    return TracePage(
        traces=[TraceOut.model_validate(t) for t in page.rows], next_cursor=page.next_cursor
    )


@router.get("/{trace_id}")
def get_trace(trace_id: str, principal: ReadKey, session: SessionDep) -> TraceDetail | TraceSteps:
    """A trace with its spans in step order and its scores."""
    found = store.get_trace(session, project_id=principal.project_id, trace_id=trace_id)
    if found is None:
        raise HTTPException(404, f"trace {trace_id!r} not found in this project")
    return found


@router.get("/{trace_id}/span-events")
def trace_span_events(trace_id: str, principal: ReadKey, session: SessionDep) -> SpanEventsOut:
    """The GenAI events (OTLP logs) of the trace's spans: ``{span_id: [event, ...]}``."""
    events = span_events_of_trace(session, project_id=principal.project_id, trace_id=trace_id)
    return SpanEventsOut.model_validate(events)
