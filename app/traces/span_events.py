"""The stored GenAI span events, read back: one store for the OTLP receiver's log route and the
monitors' window loader, so neither reaches into the other.

Events are joined to their span by ``span_id`` here. :data:`REQUESTED` and :data:`RESULTS`
are the attribute keys under which an event keeps the tool calls it requested and the tool
results it carried (written by :mod:`app.otlp.message_tool_calls`, read by the windows).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db import one_of
from app.models import SpanEvent

REQUESTED = "telltale.tool_calls.requested"
RESULTS = "telltale.tool_calls.results"


def span_events_of_trace(
    session: Session, *, project_id: int, trace_id: str
) -> dict[str, list[dict[str, Any]]]:
    """``{span_id: [event, ...]}`` of one trace, each span's events in time order."""
    rows = session.scalars(
        select(SpanEvent)
        .where(SpanEvent.project_id == project_id, SpanEvent.trace_id == trace_id)
        .order_by(SpanEvent.time, SpanEvent.id)
    ).all()
    out: dict[str, list[dict[str, Any]]] = {}
    for ev in rows:
        out.setdefault(ev.span_id, []).append(
            {"name": ev.name, "time": ev.time, "attributes": ev.attributes, "body": ev.body}
        )
    return out


def tool_calls_by_span(
    session: Session, *, project_id: int, trace_ids: list[str]
) -> dict[tuple[str, str], dict[str, list[dict[str, Any]]]]:
    """The requested tool calls and tool results the GenAI events of these traces carry,
    per ``(trace_id, span_id)``: what a span captured with ``event_only`` content lacks.

    Only the two lists are read, never the message bodies. A call or result named twice
    (the details event and a per-message event of the same span) counts once.
    """
    rows = session.execute(
        select(
            SpanEvent.trace_id,
            SpanEvent.span_id,
            SpanEvent.attributes[REQUESTED].label("requested"),
            SpanEvent.attributes[RESULTS].label("results"),
        )
        .where(
            SpanEvent.project_id == project_id,
            one_of(SpanEvent.trace_id, trace_ids, session.get_bind().dialect.name),
        )
        .order_by(SpanEvent.time, SpanEvent.id)
    )
    out: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = {}
    for row in rows:
        for key, items in ((REQUESTED, row.requested), (RESULTS, row.results)):
            if not isinstance(items, list) or not items:
                continue
            have = out.setdefault((row.trace_id, row.span_id), {}).setdefault(key, [])
            seen = {(i.get("id"), i.get("name")) for i in have}
            have += [
                i for i in items
                if isinstance(i, dict) and (i.get("id"), i.get("name")) not in seen
            ]  # fmt: skip
    return out
