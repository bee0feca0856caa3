"""What a monitor's current window holds, counted in SQL: the numbers data readiness shows.

Every figure is an aggregate over the window (a handful of ``COUNT`` queries joined on the
window's traces), never records loaded and mapped: readiness is shown on every overview,
so it must cost about the same at 100k traces/h as at 1k. The window is the one
:func:`app.monitors.windows.load_trace_window` reads (started in ``[start, end)``, ended
by ``as_of``, the selection's agent and source).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import and_, case, func, literal, or_, select
from sqlalchemy.orm import Session

from app.models import Embedding, Score, Span, Trace
from app.monitors.windows import TraceSelection, _in_window
from detectors.records import TOOL_KINDS

_REQUESTED = "telltale.tool_calls.requested"


@dataclass
class WindowCounts:
    traces: int = 0
    eval_traces: int = 0
    with_input_hash: int = 0
    repeated_inputs: int = 0  # input identities seen on two or more traces
    with_entry_point: int = 0
    with_decision: int = 0
    with_confidence: int = 0  # the trace attribute
    with_counterfactual: int = 0
    with_spans: int = 0
    with_step_confidence: int = 0
    with_tool_steps: int = 0
    with_label: int = 0  # a true score from a label source, roles applied
    with_proxy: int = 0
    with_input_embedding: int = 0
    with_output_embedding: int = 0
    # (name, stored kind, source, scores, traces) per score name in the window
    score_names: list[tuple[str, str, str, int, int]] = field(default_factory=list)


def _count_if(condition: Any) -> Any:
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


def _distinct_if(condition: Any, column: Any) -> Any:
    return func.count(func.distinct(case((condition, column), else_=None)))


def window_counts(
    session: Session, sel: TraceSelection, *, start: datetime, end: datetime, as_of: datetime
) -> WindowCounts:
    """The window's traces and, for each signal a detector reads, how many traces carry it."""
    out = WindowCounts()
    traces = _in_window(select(Trace.trace_id), sel, start, end, as_of).subquery()
    row = session.execute(
        _in_window(
            select(
                func.count(),
                _count_if(Trace.source == "eval"),
                func.count(Trace.input_hash),
                func.count(Trace.entry_point),
                _count_if(Trace.attributes["decision"].as_string().is_not(None)),
                _count_if(Trace.attributes["confidence"].as_string().is_not(None)),
                func.count(Trace.counterfactual_of),
            ),
            sel,
            start,
            end,
            as_of,
        )  # fmt: skip
    ).one()
    (out.traces, out.eval_traces, out.with_input_hash, out.with_entry_point,
     out.with_decision, out.with_confidence, out.with_counterfactual) = map(int, row)  # fmt: skip
    if not out.traces:
        return out
    groups = (
        _in_window(select(Trace.input_hash), sel, start, end, as_of)
        .where(Trace.input_hash.is_not(None))
        .group_by(Trace.input_hash)
        .having(func.count() >= 2)
        .subquery()
    )
    out.repeated_inputs = int(session.scalar(select(func.count()).select_from(groups)) or 0)
    pid = sel.project_id
    in_traces = and_(Span.project_id == pid, Span.trace_id.in_(select(traces.c.trace_id)))
    tool = or_(
        Span.kind.in_(sorted(TOOL_KINDS)),
        Span.tool_name.is_not(None),
        Span.attributes[_REQUESTED].as_string().is_not(None),
    )
    row = session.execute(
        select(
            func.count(func.distinct(Span.trace_id)),
            _distinct_if(Span.confidence.is_not(None), Span.trace_id),
            _distinct_if(tool, Span.trace_id),
        ).where(in_traces)
    ).one()
    out.with_spans, out.with_step_confidence, out.with_tool_steps = map(int, row)
    _score_counts(session, sel, traces, as_of, out)
    _embedding_counts(session, sel, start, end, as_of, out)
    return out


def _score_counts(
    session: Session, sel: TraceSelection, traces: Any, as_of: datetime, out: WindowCounts
) -> None:
    where = (
        Score.project_id == sel.project_id,
        Score.trace_id.in_(select(traces.c.trace_id)),
        Score.created_at <= as_of,
    )
    out.score_names = [
        (str(n), str(k), str(s), int(c), int(t))
        for n, k, s, c, t in session.execute(
            select(
                Score.name, Score.kind, Score.source, func.count(),
                func.count(func.distinct(Score.trace_id)),
            ).where(*where).group_by(Score.name, Score.kind, Score.source)
            .order_by(Score.name, Score.kind, Score.source)
        )
    ]  # fmt: skip
    roles = sel.roles
    named = [n for n, _ in roles.roles]

    def effective(kind: str) -> Any:
        own = Score.kind == kind
        if named:
            own = and_(own, Score.name.not_in(named))
        role_names = roles.names_with(kind)
        return or_(Score.name.in_(role_names), own) if role_names else own

    label = and_(effective("true"), Score.source.in_(list(roles.label_sources) or [""]))
    row = session.execute(
        select(
            _distinct_if(label, Score.trace_id), _distinct_if(effective("proxy"), Score.trace_id)
        ).where(*where)
    ).one()
    out.with_label, out.with_proxy = int(row[0]), int(row[1])


def _embedding_counts(
    session: Session,
    sel: TraceSelection,
    start: datetime,
    end: datetime,
    as_of: datetime,
    out: WindowCounts,
) -> None:
    pid = sel.project_id
    joined = _in_window(
        select(
            _distinct_if(Embedding.stream == Trace.agent + literal(".input"), Trace.trace_id),
            _distinct_if(Embedding.stream == Trace.agent + literal(".output"), Trace.trace_id),
        ).join(
            Embedding, and_(Embedding.project_id == pid, Embedding.trace_id == Trace.trace_id)
        ),
        sel, start, end, as_of,
    )  # fmt: skip
    row = session.execute(joined).one()
    out.with_input_embedding, out.with_output_embedding = int(row[0]), int(row[1])


def stream_counts(
    session: Session, *, project_id: int, streams: list[str], start: datetime, end: datetime
) -> dict[str, int]:
    """Vectors per embedding stream created in ``[start, end)`` (FM-6's window)."""
    if not streams:
        return {}
    rows = session.execute(
        select(Embedding.stream, func.count())
        .where(
            Embedding.project_id == project_id,
            Embedding.stream.in_(streams),
            Embedding.created_at >= start,
            Embedding.created_at < end,
        )
        .group_by(Embedding.stream)
    )
    found = {str(s): int(n) for s, n in rows}
    return {s: found.get(s, 0) for s in streams}
