"""What the session page shows: the whole conversation across its turns, each turn under the
trace it came in, with that turn's failed steps and scores.

The chat is the trace page's (:func:`app.web.trace_view.conversation`), read over the turns'
spans in order as if they were one trace: each turn's first model call repeats the
conversation so far, so what an earlier turn showed is not shown again and every turn adds
only what is new in it. Failed steps are the monitors' own (:mod:`detectors.records`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Span, SpanEvent
from app.monitors.windows.rows import chunk_records
from app.sessions.schemas import SessionDetail
from app.traces.schemas import SpanOut
from app.web import trace_view
from detectors.records import step_error
from detectors.stored_times import step_order_key


def _spans(
    session: Session, project_id: int, trace_ids: list[str]
) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {t: [] for t in trace_ids}
    for s in session.scalars(
        select(Span).where(Span.project_id == project_id, Span.trace_id.in_(trace_ids))
    ):
        out[s.trace_id].append(SpanOut.model_validate(s).model_dump())
    key = {"step_index", "started_at", "span_id"}
    for spans in out.values():
        spans.sort(key=lambda s: step_order_key({k: s[k] for k in key}))
    return out


def _events(
    session: Session, project_id: int, trace_ids: list[str]
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    out: dict[str, dict[str, list[dict[str, Any]]]] = {t: {} for t in trace_ids}
    rows = session.execute(
        select(SpanEvent.trace_id, SpanEvent.span_id, SpanEvent.name, SpanEvent.attributes,
               SpanEvent.body)
        .where(SpanEvent.project_id == project_id, SpanEvent.trace_id.in_(trace_ids))
        .order_by(SpanEvent.time, SpanEvent.id)
    )  # fmt: skip
    for trace_id, span_id, name, attributes, body in rows:
        out[trace_id].setdefault(span_id, []).append(
            {"name": name, "attributes": attributes or {}, "body": body}
        )
    return out


def _failed_steps(session: Session, project_id: int, trace_ids: list[str]) -> dict[str, list[str]]:
    """Each turn's failed steps in words ("tool lookup_order: ConnectionError")."""
    found = chunk_records(session, trace_ids, project_id=project_id, as_of=None, scores=False)
    out: dict[str, list[str]] = {}
    for rec in found:
        out[rec.trace_id] = [
            f"{s.kind} {s.tool_name or s.name}: {s.error_type or 'error'}"
            for s in rec.steps
            if step_error(s)
        ]
    return out


def session_turns(
    session: Session, *, project_id: int, detail: SessionDetail, first_number: int = 1
) -> list[dict[str, Any]]:
    """The page's turns, numbered from ``first_number``: each with its trace's fields, its
    part of the conversation, its failed steps and its scores read with the project's roles."""
    ids = [t.trace_id for t in detail.traces]
    if not ids:
        return []
    spans, events = _spans(session, project_id, ids), _events(session, project_id, ids)
    # Span ids are unique within a trace only: prefixed with the turn's position here.
    joined, joined_events = [], {}
    for k, trace_id in enumerate(ids):
        for s in spans[trace_id]:
            joined.append({**s, "span_id": f"{k}:{s['span_id']}"})
        for span_id, evs in events[trace_id].items():
            joined_events[f"{k}:{span_id}"] = evs
    chat: list[list[trace_view.ChatMessage]] = [[] for _ in ids]
    for message in trace_view.conversation(joined, joined_events):
        chat[int(message.span_id.split(":", 1)[0])].append(message)
    failed = _failed_steps(session, project_id, ids)
    turns = []
    for k, turn in enumerate(detail.traces):
        fields = turn.model_dump()
        scores = trace_view.scores(session, project_id=project_id, rows=fields.pop("scores"))
        turns.append({"number": first_number + k, "trace": fields, "chat": chat[k],
                      "failed_steps": failed.get(turn.trace_id, []), "scores": scores})  # fmt: skip
    return turns
