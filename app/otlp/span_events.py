"""Reading GenAI events back, grouped under their span (joined by ``span_id`` here)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import SpanEvent


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
