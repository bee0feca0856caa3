"""What a monitor's current window holds, counted in SQL: the numbers data readiness shows.

Every figure is an aggregate over the window (a handful of ``COUNT`` queries joined on the
window's traces), never records loaded and mapped: readiness is shown on every overview,
so it must cost about the same at 100k traces/h as at 1k. Past :data:`MAX_TRACES_COUNTED`
traces, the per-trace span and score flags are counted on a deterministic stride of the
window's traces and scaled (the answer says how many were counted). The window is the one
:func:`app.monitors.windows.trace_window.load_trace_window` reads (started in ``[start, end)``, ended
by ``as_of``, the selection's agent and source).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import and_, case, func, literal, or_, select
from sqlalchemy.orm import Session

from app.models import Embedding, Score, Span, Trace
from app.monitors.windows.trace_window import TraceSelection, in_window
from app.scores import roles as score_roles
from detectors.records import TOOL_KINDS

_REQUESTED = "telltale.tool_calls.requested"
# Span and score flags are counted on at most this many traces of a window (measured on
# PostgreSQL, 2 cores: 20,000 traces with 60,000 spans in 0.3 s for all seven monitors).
MAX_TRACES_COUNTED = 20_000
_SCALED = ("with_spans", "with_step_confidence", "with_tool_steps", "with_label", "with_proxy",
           "with_three_tool_steps")  # fmt: skip
_OTLP_KEY = "otel.agent_key"  # every trace row the OTLP receiver writes carries it


@dataclass
class WindowCounts:
    traces: int = 0
    eval_traces: int = 0
    with_input_hash: int = 0
    repeated_inputs: int = 0  # input identities seen on two or more traces
    with_entry_point: int = 0
    with_decision: int = 0
    distinct_decisions: int = 0  # one value on every trace says nothing (e.g. "|stop")
    with_confidence: int = 0  # the trace attribute
    with_counterfactual: int = 0
    with_spans: int = 0
    with_step_confidence: int = 0
    with_tool_steps: int = 0
    with_label: int = 0  # a true score from a label source, roles applied
    with_proxy: int = 0
    with_input_embedding: int = 0
    with_output_embedding: int = 0
    # None where not counted (counts a run kept before these existed): no verdict on them.
    with_three_tool_steps: int | None = None  # traces with 3+ tool calls (FM-1's shape)
    via_otlp: int | None = None  # traces that arrived through OTLP (else the native API)
    counted_traces: int = 0  # the traces span and score flags were counted on
    # (name, stored kind, source, scores, traces) per score name in the window
    score_names: list[tuple[str, str, str, int, int]] = field(default_factory=list)
    # Counts a run kept: its id, time and window (app/monitors/readiness/recorded.py).
    recorded_by: dict[str, Any] | None = None


def _count_if(condition: Any) -> Any:
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


def _distinct_if(condition: Any, column: Any) -> Any:
    return func.count(func.distinct(case((condition, column), else_=None)))


def _per_trace(trace_id: Any, where: Any, *conditions: Any) -> Any:
    """``(traces with a row, traces with a row meeting each condition)``: one hash
    aggregate per trace, then sums (measured 3x faster on PostgreSQL than one
    ``COUNT(DISTINCT ...)`` per condition, each of which sorts the rows)."""
    flags = [func.max(case((c, 1), else_=0)).label(f"f{i}") for i, c in enumerate(conditions)]
    per_trace = select(trace_id, *flags).where(where).group_by(trace_id).subquery()
    sums = [func.coalesce(func.sum(per_trace.c[f"f{i}"]), 0) for i in range(len(conditions))]
    return select(func.count(), *sums).select_from(per_trace)


def window_counts(
    session: Session, sel: TraceSelection, *, start: datetime, end: datetime, as_of: datetime
) -> WindowCounts:
    """The window's traces and, for each signal a detector reads, how many traces carry it."""
    out = WindowCounts()
    row = session.execute(
        in_window(
            select(
                func.count(),
                _count_if(Trace.source == "eval"),
                func.count(Trace.input_hash),
                func.count(Trace.entry_point),
                _count_if(Trace.attributes["decision"].as_string().is_not(None)),
                func.count(func.distinct(Trace.attributes["decision"].as_string())),
                _count_if(Trace.attributes["confidence"].as_string().is_not(None)),
                func.count(Trace.counterfactual_of),
                _count_if(Trace.attributes[_OTLP_KEY].as_string().is_not(None)),
            ),
            sel,
            start,
            end,
            as_of,
        )  # fmt: skip
    ).one()
    (out.traces, out.eval_traces, out.with_input_hash, out.with_entry_point,
     out.with_decision, out.distinct_decisions, out.with_confidence,
     out.with_counterfactual, out.via_otlp) = map(int, row)  # fmt: skip
    if not out.traces:
        return out
    # Span and score flags are per trace: beyond MAX_TRACES_COUNTED, every k-th trace row
    # (by id: arrival order, spread over the window) is counted and the counts scaled.
    stride = -(-out.traces // MAX_TRACES_COUNTED)
    q = in_window(select(Trace.trace_id), sel, start, end, as_of)
    traces = (q.where(Trace.id % stride == 0) if stride > 1 else q).subquery()
    if stride > 1:
        out.counted_traces = int(session.scalar(select(func.count()).select_from(traces)) or 0)
    else:
        out.counted_traces = out.traces
    groups = (
        in_window(select(Trace.input_hash), sel, start, end, as_of)
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
        _per_trace(Span.trace_id, in_traces, Span.confidence.is_not(None), tool)
    ).one()
    out.with_spans, out.with_step_confidence, out.with_tool_steps = map(int, row)
    several = (
        select(Span.trace_id)
        .where(in_traces, tool)
        .group_by(Span.trace_id)
        .having(func.count() >= 3)
        .subquery()
    )
    out.with_three_tool_steps = int(session.scalar(select(func.count()).select_from(several)) or 0)
    _score_counts(session, sel, traces, as_of, out)
    if out.counted_traces != out.traces:
        scale = out.traces / max(out.counted_traces, 1)
        for name in _SCALED:
            value = getattr(out, name)
            if value is not None:
                setattr(out, name, min(out.traces, round(value * scale)))
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
    label, proxy = score_roles.is_label(sel.roles), score_roles.kind_is(sel.roles, "proxy")
    row = session.execute(_per_trace(Score.trace_id, and_(*where), label, proxy)).one()
    out.with_label, out.with_proxy = int(row[1]), int(row[2])


def _embedding_counts(
    session: Session,
    sel: TraceSelection,
    start: datetime,
    end: datetime,
    as_of: datetime,
    out: WindowCounts,
) -> None:
    pid = sel.project_id
    joined = in_window(
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
