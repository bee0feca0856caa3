"""A window's rows read from the database, a chunk of trace ids at a time, into records.

The monitors' loader (:mod:`app.monitors.windows.trace_window`) decides which traces a window holds;
this reads them: the trace rows, their spans (only the attribute keys detectors read), the
tool calls of their GenAI events and their scores, mapped by :func:`records.from_rows`.
Row reading is most of a cycle's cost at volume, so it is lean: plain row tuples, one
array parameter for the id list on PostgreSQL (:func:`app.db.one_of`), times read as
they come, and no span read for a trace whose steps the scheduler still holds
(:mod:`app.monitors.windows.step_cache`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, select, type_coerce
from sqlalchemy.orm import Session

from app.db import one_of
from app.ingest.score_values import stored_in_range
from app.models import Score, Span, Trace
from app.models.base import UTCDateTime
from app.monitors.windows.step_cache import StepCache
from app.scores.roles import DEFAULT_ROLES, ScoreRoles
from app.traces.span_events import tool_calls_by_span
from detectors import records
from detectors.needs import STEP_ATTRIBUTES


def chunks(ids: list[Any], size: int = 1000) -> list[list[Any]]:
    return [ids[i : i + size] for i in range(0, len(ids), size)]


_TRACE_COLUMNS = (
    Trace.trace_id, Trace.agent, Trace.agent_version, Trace.started_at, Trace.ended_at,
    Trace.status, Trace.input_hash, Trace.entry_point, Trace.source, Trace.counterfactual_of,
    Trace.attributes, Trace.loop_calls, Trace.loop_tool,
)  # fmt: skip
_SPAN_COLUMNS = (
    Span.trace_id, Span.span_id, Span.parent_span_id, Span.step_index, Span.kind, Span.name,
    Span.status, Span.tool_name, Span.error_type, Span.started_at, Span.ended_at, Span.confidence,
    Span.input_tokens, Span.output_tokens, Span.total_tokens, Span.cost,
)  # fmt: skip
# Only the attribute keys detectors read (prompts and completions stay in the database).
_SPAN_ATTRIBUTES = tuple(Span.attributes[k].label(f"a{i}") for i, k in enumerate(STEP_ATTRIBUTES))


def plain_times(columns: tuple[Any, ...], dialect: str) -> tuple[Any, ...]:
    """The columns, with PostgreSQL's ``timestamptz`` read as it comes (already aware):
    the records turn every time into epoch seconds, so :class:`app.models.base.UTCDateTime`'s
    conversion of each of a window's million values to UTC is wasted there. SQLite's naive
    values keep it (they are UTC, not local time)."""
    if dialect != "postgresql":
        return columns
    return tuple(
        type_coerce(c, DateTime(timezone=True)).label(c.key)
        if isinstance(c.type, UTCDateTime)
        else c
        for c in columns
    )


_TRACE_KEYS = tuple(c.key for c in _TRACE_COLUMNS)
_SPAN_KEYS = tuple(c.key for c in _SPAN_COLUMNS)
_SCORE_COLUMNS = (
    Score.trace_id,
    Score.name,
    Score.value,
    Score.kind,
    Score.source,
    Score.created_at,
)
_SCORE_KEYS = tuple(c.key for c in _SCORE_COLUMNS)


def _span_row(row: tuple[Any, ...]) -> dict[str, Any]:
    """A span row (its columns, then the step attributes) as the mapping records read;
    plain tuples: a window has ~7 spans a trace, and ``RowMapping`` costs twice as much."""
    n = len(_SPAN_KEYS)
    out = dict(zip(_SPAN_KEYS, row[:n], strict=True))
    out["attributes"] = {
        k: v for k, v in zip(STEP_ATTRIBUTES, row[n:], strict=True) if v is not None
    }
    return out


def chunk_records(
    session: Session,
    chunk: list[Any],
    *,
    project_id: int,
    roles: ScoreRoles = DEFAULT_ROLES,
    as_of: datetime | None,
    scores: bool = True,
    cache: StepCache | None = None,
    updated: dict[Any, Any] | None = None,
) -> list[records.TraceRecord]:
    """The records of one chunk of trace ids, with their spans and (unless not asked
    for) scores. With a step ``cache`` and the traces' ``updated`` times, only the spans
    of traces without cached steps are read."""
    pid = project_id
    dialect = session.get_bind().dialect.name
    known: dict[str, tuple[records.Step, ...]] = {}
    if cache is not None and updated is not None:
        for tid in chunk:
            steps = cache.get(pid, tid, updated.get(tid))
            if steps is not None:
                known[tid] = steps
    unread = [tid for tid in chunk if tid not in known] if known else chunk
    traces = [
        dict(zip(_TRACE_KEYS, row, strict=True))
        for row in session.execute(
            select(*plain_times(_TRACE_COLUMNS, dialect)).where(
                Trace.project_id == pid, one_of(Trace.trace_id, chunk, dialect)
            )
        )
    ]
    spans = (
        [
            _span_row(row)
            for row in session.execute(
                select(*plain_times(_SPAN_COLUMNS, dialect), *_SPAN_ATTRIBUTES).where(
                    Span.project_id == pid, one_of(Span.trace_id, unread, dialect)
                )
            )
        ]
        if unread
        else []
    )
    score_q = (
        select(*plain_times(_SCORE_COLUMNS, dialect))
        .where(
            Score.project_id == pid,
            one_of(Score.trace_id, chunk, dialect),
            # Rows stored before the bound (app.ingest.score_values) stay out of every detector:
            # one 1e200 label switched OUTCOME's test off.
            stored_in_range(Score.value),
        )
        .order_by(Score.id)
    )
    if as_of is not None:
        score_q = score_q.where(Score.created_at <= as_of)
    if unread:
        with_event_tool_calls(session, spans, project_id=pid, trace_ids=unread)
    if not scores:
        return records.from_rows(traces, spans, known_steps=known)
    out = records.from_rows(
        traces,
        spans,
        (roles.apply(dict(zip(_SCORE_KEYS, row, strict=True))) for row in session.execute(score_q)),
        known_steps=known,
    )
    if cache is not None and updated is not None:
        for r in out:
            if r.trace_id not in known:
                cache.put(pid, r.trace_id, updated.get(r.trace_id), r.steps)
    return out


def with_event_tool_calls(
    session: Session, spans: list[dict[str, Any]], *, project_id: int, trace_ids: list[Any]
) -> None:
    """Give spans whose content came as GenAI events (``event_only``) the tool calls those
    events carry, so a plain client's requested calls become steps either way."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for chunk in chunks(trace_ids):
        found.update(tool_calls_by_span(session, project_id=project_id, trace_ids=chunk))
    for span in spans if found else ():
        extra = found.get((span["trace_id"], span["span_id"]))
        for key, items in (extra or {}).items():
            span["attributes"].setdefault(key, items)
