"""Trace queries, scoped to one project."""

from __future__ import annotations

from datetime import datetime
from operator import eq, ge, lt
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from app.models import Score, Span, Trace
from app.pagination import Page, paginate, where_given
from app.traces.schemas import ScoreOut, SpanOut, TraceDetail, TraceOut, TraceSteps
from detectors.stored_times import step_order_key


def filtered(
    *,
    project_id: int,
    agent: str | None = None,
    status: str | None = None,
    source: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    agent_version: str | None = None,
    trace_id: str | None = None,
    session_id: str | None = None,
    user_id: str | None = None,
    loop: bool | None = None,
    tool: str | None = None,
    model: str | None = None,
) -> Select[Any]:
    """The project's traces narrowed by each filter given; ``since <= started_at < until``;
    ``loop``: with (True) or without (False) a tool loop (app/derive/loops.py); ``tool``: with
    a call of that tool, named as the tool rollups name it (the tool's name, else the
    span's), ``model``: with an LLM call answered by (else asked of) that model; each a seek
    per trace on the spans' ``(project_id, trace_id)`` key (the agent graph's nodes link
    here)."""
    query = select(Trace).where(Trace.project_id == project_id)
    named = []
    if tool is not None:
        named.append((Span.tool_name == tool) | (
            Span.tool_name.is_(None) & Span.kind.in_(("tool", "retrieval")) & (Span.name == tool)
        ))  # fmt: skip
    if model is not None:
        named.append((Span.kind == "llm") & ((Span.response_model == model) | (
            Span.response_model.is_(None) & (Span.request_model == model)
        )))  # fmt: skip
    for spans_named in named:
        query = query.where(
            select(Span.id)
            .where(Span.project_id == project_id, Span.trace_id == Trace.trace_id, spans_named)
            .exists()
        )
    if loop is not None:
        query = query.where(Trace.loop_tool.is_not(None) if loop else Trace.loop_tool.is_(None))
    return where_given(
        query,
        (Trace.agent, eq, agent),
        (Trace.agent_version, eq, agent_version),
        (Trace.trace_id, eq, trace_id),
        (Trace.session_id, eq, session_id),
        (Trace.user_id, eq, user_id),
        (Trace.status, eq, status),
        (Trace.source, eq, source),
        (Trace.started_at, ge, since),
        (Trace.started_at, lt, until),
    )


def list_traces(
    session: Session, filtered: Select[Any], *, limit: int = 50, cursor: int | None = None
) -> Page[Trace]:
    """The traces ``filtered`` selects (see :func:`filtered`), newest first (a text search is
    :func:`app.traces.search.search_traces`)."""
    return paginate(session, filtered, id_column=Trace.id, limit=limit, cursor=cursor)


def get_trace(
    session: Session, *, project_id: int, trace_id: str
) -> TraceDetail | TraceSteps | None:
    """The trace with its spans in step order and its scores; None when nothing is stored.

    Spans may arrive before their trace row (OTLP exporters send them in any order): then
    the answer has the spans and scores under the trace id alone.
    """
    pid = project_id
    trace = session.scalar(select(Trace).where(Trace.project_id == pid, Trace.trace_id == trace_id))
    spans = session.scalars(
        select(Span).where(Span.project_id == pid, Span.trace_id == trace_id)
    ).all()
    if trace is None and not spans:
        return None
    ordered = sorted(
        spans,
        key=lambda s: step_order_key(
            {"step_index": s.step_index, "started_at": s.started_at, "span_id": s.span_id}
        ),
    )
    scores = session.scalars(
        select(Score).where(Score.project_id == pid, Score.trace_id == trace_id).order_by(Score.id)
    ).all()
    span_out = [SpanOut.model_validate(s) for s in ordered]
    score_out = [ScoreOut.model_validate(s) for s in scores]
    if trace is None:
        return TraceSteps(trace_id=trace_id, spans=span_out, scores=score_out)
    fields = TraceOut.model_validate(trace).model_dump()
    return TraceDetail.model_validate({**fields, "spans": span_out, "scores": score_out})
