"""Load a monitor's data windows from the database into the detectors' shapes.

Trace windows become ``detectors.records.TraceRecord`` lists following the contract in
``detectors/records.py``: epoch-float times, spans as steps in step order, every score of
the trace (the detector hides the ones created after ``now``), and input/output
embeddings from the streams ``<agent>.input`` / ``<agent>.output`` joined on
``trace_id``. Scores are read with the project's score roles (:mod:`app.scores.roles`):
a name's role is its kind, and a ``true`` score is a label when its source is one of the
project's label sources (by default ``delayed`` and ``human``). FM-6's embedding windows
are :mod:`app.monitors.vector_windows`'.

What a window holds at volume is sampled, never cut to the newest rows: traces by
:mod:`app.monitors.sampling` (eval traces whole, production by group hash), and the count
statistics still see every trace through their step profiles
(:mod:`app.monitors.step_profiles`). Windows are read through
:class:`app.monitors.cycle.WindowCache` when the scheduler runs several monitors in one
cycle, so each is loaded once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Engine, Select, or_, select
from sqlalchemy.orm import Session

from app.models import Embedding, Score, Span, Trace
from app.monitors import sampling, step_profiles
from app.otlp.span_events import tool_calls_by_span
from app.scores.roles import DEFAULT_ROLES, ScoreRoles
from detectors import records
from detectors.signals import STEP_ATTRIBUTES
from detectors.step_profiles import RecordWindow, step_profile

DEFAULT_MAX_TRACES = 20_000


@dataclass(frozen=True)
class TraceSelection:
    """Which traces a monitor reads; ``max_traces`` caps the *production* traces loaded
    per window (a sample beyond it: :func:`app.monitors.sampling.plan_sample`)."""

    project_id: int
    agent: str | None = None
    source: str | None = None
    max_traces: int = DEFAULT_MAX_TRACES
    # The project's score roles, applied to every score as it is read (app/scores/roles.py).
    roles: ScoreRoles = DEFAULT_ROLES
    # Only this agent version's traces (a version baseline: app/monitors/version_baseline.py).
    agent_version: str | None = None


@dataclass(frozen=True)
class TraceWindow:
    records: list[records.TraceRecord]
    sample: sampling.SamplePlan
    # A sampled window's step profiles over every trace (app/monitors/step_profiles.py).
    profiles: step_profiles.WindowProfiles | None = None

    def evidence(self) -> dict[str, Any]:
        """What the run's evidence records of this window."""
        found = self.sample.evidence()
        if self.profiles is not None:
            found["step_profiles"] = self.profiles.evidence()
        return found


def _chunks(ids: list[Any], size: int = 1000) -> list[list[Any]]:
    return [ids[i : i + size] for i in range(0, len(ids), size)]


_TRACE_COLUMNS = (
    Trace.trace_id, Trace.agent, Trace.agent_version, Trace.started_at, Trace.ended_at,
    Trace.status, Trace.input_hash, Trace.entry_point, Trace.source, Trace.counterfactual_of,
    Trace.attributes,
)  # fmt: skip
_KEY_COLUMNS = (Trace.trace_id, Trace.source, Trace.input_hash, Trace.counterfactual_of)
_PROFILE_KEY_COLUMNS = (Trace.project_id, Trace.step_profile, Trace.updated_at)
_SPAN_COLUMNS = (
    Span.trace_id, Span.span_id, Span.parent_span_id, Span.step_index, Span.kind, Span.name,
    Span.status, Span.tool_name, Span.error_type, Span.started_at, Span.ended_at, Span.confidence,
)  # fmt: skip
# Only the attribute keys detectors read (prompts and completions stay in the database).
_SPAN_ATTRIBUTES = tuple(Span.attributes[k].label(f"a{i}") for i, k in enumerate(STEP_ATTRIBUTES))


def _span_row(row: Any) -> dict[str, Any]:
    out = dict(row)
    attrs = {k: out.pop(f"a{i}") for i, k in enumerate(STEP_ATTRIBUTES)}
    out["attributes"] = {k: v for k, v in attrs.items() if v is not None}
    return out


def _in_window(
    q: Any, sel: TraceSelection, start: datetime, end: datetime, as_of: datetime | None
) -> Select[Any]:
    q = q.where(
        Trace.project_id == sel.project_id, Trace.started_at >= start, Trace.started_at < end
    )
    if as_of is not None:
        q = q.where(or_(Trace.ended_at.is_(None), Trace.ended_at <= as_of))
    if sel.agent:
        q = q.where(Trace.agent == sel.agent)
    if sel.source:
        q = q.where(Trace.source == sel.source)
    if sel.agent_version:
        q = q.where(Trace.agent_version == sel.agent_version)
    return q


def load_trace_records(
    session: Session,
    sel: TraceSelection,
    *,
    start: datetime,
    end: datetime,
    as_of: datetime | None = None,
    with_embeddings: bool = True,
) -> list[records.TraceRecord]:
    """The (sampled) traces that started in ``[start, end)``, oldest first."""
    return load_trace_window(
        session, sel, start=start, end=end, as_of=as_of, with_embeddings=with_embeddings
    ).records


def load_trace_window(
    session: Session,
    sel: TraceSelection,
    *,
    start: datetime,
    end: datetime,
    as_of: datetime | None = None,
    with_embeddings: bool = True,
    profile_writer: Engine | None = None,
) -> TraceWindow:
    """The traces that started in ``[start, end)`` as records (:func:`records.from_rows`),
    sampled beyond ``sel.max_traces`` production traces, with the sample's description.

    With ``as_of`` (the run's ``now``) a replayed run sees what a live one would have:
    traces that had ended by then and scores created by then. A sampled window's records
    come as a :class:`~detectors.step_profiles.RecordWindow` with every trace's step
    profile counted; profiles computed on the way are written through ``profile_writer``.
    """
    pid = sel.project_id
    keys: list[Any] = list(
        session.execute(
            _in_window(select(*_KEY_COLUMNS, *_PROFILE_KEY_COLUMNS), sel, start, end, as_of)
        ).mappings()
    )
    plan = sampling.plan_sample(keys, max_production=sel.max_traces)
    tally = None
    if plan.rate < 1.0:
        tally = step_profiles.count_window(
            keys,
            sampled=set(plan.trace_ids),
            load_chunk=lambda ids: _chunk_records(session, sel, ids, as_of=as_of, scores=False),
            write_engine=profile_writer,
        )
    del keys
    # Rows are fetched by explicit id lists in chunks: a plain index lookup per chunk,
    # whatever the planner thinks of the window on a freshly loaded table. Each chunk
    # becomes records before the next is read, so the window's raw rows never sit in
    # memory all at once beside its records: two 20,000-trace windows took 188 MB resident
    # instead of 371 MB (bench/scale's traffic at 10,000 traces/h).
    out: list[records.TraceRecord] = []
    for chunk in _chunks(plan.trace_ids):
        out += _chunk_records(session, sel, chunk, as_of=as_of)
    out.sort(key=lambda r: (r.started_at, r.trace_id))
    profiles = None
    if tally is not None:
        profiles = tally.finish(out, write_engine=profile_writer)
        out = RecordWindow(out, step_profiles=profiles.counts)
    window = TraceWindow(out, plan, profiles)
    return with_trace_embeddings(session, window, project_id=pid) if with_embeddings else window


def step_profiles_of(session: Session, *, project_id: int, trace_ids: list[Any]) -> dict[str, str]:
    """The step profile of each stored trace (:mod:`detectors.step_profiles`), from the same
    records the monitors' windows are built of (the derive job stores them ahead)."""
    sel = TraceSelection(project_id=project_id)
    return {
        r.trace_id: step_profile(r.steps)
        for chunk in _chunks(trace_ids)
        for r in _chunk_records(session, sel, chunk, as_of=None, scores=False)
    }


def _chunk_records(
    session: Session,
    sel: TraceSelection,
    chunk: list[Any],
    *,
    as_of: datetime | None,
    scores: bool = True,
) -> list[records.TraceRecord]:
    """The records of one chunk of trace ids, with their spans and (unless not asked
    for) scores."""
    pid = sel.project_id
    traces: list[Any] = list(
        session.execute(
            select(*_TRACE_COLUMNS).where(Trace.project_id == pid, Trace.trace_id.in_(chunk))
        ).mappings()
    )
    spans = [
        _span_row(row)
        for row in session.execute(
            select(*_SPAN_COLUMNS, *_SPAN_ATTRIBUTES).where(
                Span.project_id == pid, Span.trace_id.in_(chunk)
            )
        ).mappings()
    ]
    score_q = (
        select(Score.trace_id, Score.name, Score.value, Score.kind, Score.source, Score.created_at)
        .where(Score.project_id == pid, Score.trace_id.in_(chunk))
        .order_by(Score.id)
    )
    if as_of is not None:
        score_q = score_q.where(Score.created_at <= as_of)
    with_event_tool_calls(session, spans, project_id=pid, trace_ids=chunk)
    if not scores:
        return records.from_rows(traces, spans)
    return records.from_rows(
        traces, spans, map(sel.roles.apply, session.execute(score_q).mappings())
    )


def with_event_tool_calls(
    session: Session, spans: list[dict[str, Any]], *, project_id: int, trace_ids: list[Any]
) -> None:
    """Give spans whose content came as GenAI events (``event_only``) the tool calls those
    events carry, so a plain client's requested calls become steps either way."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for chunk in _chunks(trace_ids):
        found.update(tool_calls_by_span(session, project_id=project_id, trace_ids=chunk))
    for span in spans if found else ():
        extra = found.get((span["trace_id"], span["span_id"]))
        for key, items in (extra or {}).items():
            span["attributes"].setdefault(key, items)


def with_trace_embeddings(session: Session, window: TraceWindow, *, project_id: int) -> TraceWindow:
    """The window with each record's ``<agent>.input`` / ``<agent>.output`` vectors
    (the last row of each wins, as in :func:`records.from_rows`)."""
    agents = {r.trace_id: r.agent for r in window.records}
    streams = [f"{a}.{side}" for a in set(agents.values()) for side in ("input", "output")]
    found: dict[tuple[str, str], np.ndarray] = {}
    for chunk in _chunks(list(agents)):
        for row in session.execute(
            select(Embedding.trace_id, Embedding.stream, Embedding.vector)
            .where(
                Embedding.project_id == project_id,
                Embedding.trace_id.in_(chunk),
                Embedding.stream.in_(streams),
            )
            .order_by(Embedding.id)
        ):
            agent, _, side = str(row.stream).rpartition(".")
            if agents.get(row.trace_id) == agent:
                found[(row.trace_id, side)] = np.frombuffer(row.vector, dtype="<f4")
    out = [
        replace(
            r,
            input_embedding=found.get((r.trace_id, "input")),
            output_embedding=found.get((r.trace_id, "output")),
        )
        for r in window.records
    ]
    if window.profiles is not None:
        out = RecordWindow(out, step_profiles=window.profiles.counts)
    return TraceWindow(out, window.sample, window.profiles)
