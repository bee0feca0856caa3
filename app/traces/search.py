"""Text search over traces and the content their spans carry, bounded per page.

A trace sent as JSON keeps its input, output and decision in its own attributes; one sent
over OTLP keeps the conversation in its spans (``gen_ai.input.messages``,
``gen_ai.output.messages``, tool arguments and results in span attributes) and in the GenAI
span events (:mod:`app.traces.span_events`: attributes and body). So a trace matches when
the text is in any of them, case-insensitively, as a literal substring (``%`` and ``_``
are not wildcards).

That content is large (an agent's LLM spans each repeat the conversation so far) and no
index serves a substring, so each page reads at most :data:`SCAN_TRACES` traces: the
newest of the filtered range before the cursor. Their spans and events are reached
through the ``(project_id, trace_id)`` indexes, so the work grows with those traces, not
with the table. When fewer than a page of matches is found in them, the answer says
where the scan stopped (``scanned_to``) and the next page goes on from there: no match is
skipped, the search only takes several pages to cover a long range.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, Text, cast, func, or_, select
from sqlalchemy.orm import Session

from app.models import Span, SpanEvent, Trace

SCAN_TRACES = 2_000  # traces (and their spans and events) a page of text search reads


@dataclass(frozen=True)
class SearchPage:
    rows: list[Trace]
    next_cursor: str | None
    scanned: int  # traces read by this page
    scanned_to: datetime | None  # the oldest start among them when the scan stopped short


def _like(column: Any, text: str) -> Any:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return func.lower(column).like(f"%{escaped}%", escape="\\")


def search_traces(
    session: Session,
    filtered: Select[Any],
    *,
    project_id: int,
    text: str,
    limit: int,
    cursor: int | None,
    scan: int | None = None,
) -> SearchPage:
    """Up to ``limit`` traces of ``filtered`` (a ``select(Trace)`` with the page's other
    filters) whose attributes, spans or span events contain ``text``, newest first,
    among the ``scan`` (default :data:`SCAN_TRACES`) newest before ``cursor``."""
    scan = scan or SCAN_TRACES
    if cursor is not None:
        filtered = filtered.where(Trace.id < cursor)
    scanned = (
        filtered.with_only_columns(Trace.id, Trace.trace_id, Trace.started_at)
        .order_by(Trace.id.desc())
        .limit(scan)
        .subquery()
    )
    ids = select(scanned.c.trace_id)
    in_spans = select(Span.trace_id).where(
        Span.project_id == project_id,
        Span.trace_id.in_(ids),
        or_(_like(cast(Span.attributes, Text), text), _like(Span.name, text)),
    )
    in_events = select(SpanEvent.trace_id).where(
        SpanEvent.project_id == project_id,
        SpanEvent.trace_id.in_(ids),
        or_(_like(cast(SpanEvent.attributes, Text), text), _like(cast(SpanEvent.body, Text), text)),
    )
    q = select(Trace).where(
        Trace.project_id == project_id,
        Trace.id.in_(select(scanned.c.id)),
        or_(
            _like(cast(Trace.attributes, Text), text),
            Trace.trace_id.in_(in_spans),
            Trace.trace_id.in_(in_events),
        ),
    )
    rows = list(session.scalars(q.order_by(Trace.id.desc()).limit(limit + 1)))
    if len(rows) > limit:
        return SearchPage(rows[:limit], str(rows[limit - 1].id), scan, None)
    n, oldest_id, oldest_at = session.execute(
        select(func.count(), func.min(scanned.c.id), func.min(scanned.c.started_at))
    ).one()
    if n < scan:  # the range is exhausted
        return SearchPage(rows, None, int(n), None)
    return SearchPage(rows, str(oldest_id), int(n), oldest_at)
