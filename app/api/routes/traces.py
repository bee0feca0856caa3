"""Reading traces back: a filtered, cursor-paginated list, and one trace with its steps."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Query
from sqlalchemy import select

from app.api.deps import Int8Id, ReadKey, SessionDep
from app.models import Score, Span, Trace
from app.models.base import UTCTime

router = APIRouter(prefix="/api/v1/traces", tags=["traces"])


def trace_dict(t: Trace) -> dict[str, Any]:
    return {
        "trace_id": t.trace_id,
        "agent": t.agent,
        "agent_version": t.agent_version,
        "started_at": t.started_at,
        "ended_at": t.ended_at,
        "status": t.status,
        "input_hash": t.input_hash,
        "entry_point": t.entry_point,
        "source": t.source,
        "counterfactual_of": t.counterfactual_of,
        "attributes": t.attributes,
    }


@router.get("")
def list_traces(
    principal: ReadKey,
    session: SessionDep,
    agent: str | None = None,
    status: Literal["ok", "error"] | None = None,
    source: Literal["production", "eval", "shadow"] | None = None,
    since: UTCTime | None = Query(None, description="started_at >= since (ISO-8601)"),
    until: UTCTime | None = Query(None, description="started_at < until (ISO-8601)"),
    limit: int = Query(50, ge=1, le=500),
    cursor: Int8Id | None = Query(None, description="next_cursor of the previous page"),
) -> dict[str, Any]:
    """Newest first. Pass ``next_cursor`` back as ``cursor`` for the next page."""
    q = select(Trace).where(Trace.project_id == principal.project_id)
    if agent is not None:
        q = q.where(Trace.agent == agent)
    if status is not None:
        q = q.where(Trace.status == status)
    if source is not None:
        q = q.where(Trace.source == source)
    if since is not None:
        q = q.where(Trace.started_at >= since)
    if until is not None:
        q = q.where(Trace.started_at < until)
    if cursor is not None:
        q = q.where(Trace.id < cursor)
    rows = session.scalars(q.order_by(Trace.id.desc()).limit(limit + 1)).all()
    page = rows[:limit]
    next_cursor = str(page[-1].id) if len(rows) > limit else None
    return {"traces": [trace_dict(t) for t in page], "next_cursor": next_cursor}


@router.get("/{trace_id}")
def get_trace(trace_id: str, principal: ReadKey, session: SessionDep) -> dict[str, Any]:
    """A trace with its spans in step order and its scores."""
    pid = principal.project_id
    trace = session.scalar(select(Trace).where(Trace.project_id == pid, Trace.trace_id == trace_id))
    spans = session.scalars(
        select(Span).where(Span.project_id == pid, Span.trace_id == trace_id)
    ).all()
    if trace is None and not spans:
        raise HTTPException(404, f"trace {trace_id!r} not found in this project")
    ordered = sorted(
        spans,
        key=lambda s: (
            s.step_index if s.step_index is not None else 1 << 30,
            s.started_at.timestamp() if s.started_at else 0.0,
            s.id,
        ),
    )
    scores = session.scalars(
        select(Score).where(Score.project_id == pid, Score.trace_id == trace_id).order_by(Score.id)
    ).all()
    body: dict[str, Any] = trace_dict(trace) if trace is not None else {"trace_id": trace_id}
    body["spans"] = [
        {
            "span_id": s.span_id,
            "parent_span_id": s.parent_span_id,
            "kind": s.kind,
            "name": s.name,
            "tool_name": s.tool_name,
            "status": s.status,
            "error_type": s.error_type,
            "started_at": s.started_at,
            "ended_at": s.ended_at,
            "step_index": s.step_index,
            "confidence": s.confidence,
            "attributes": s.attributes,
        }
        for s in ordered
    ]
    body["scores"] = [
        {
            "name": s.name,
            "value": s.value,
            "kind": s.kind,
            "source": s.source,
            "created_at": s.created_at,
        }
        for s in scores
    ]
    return body
