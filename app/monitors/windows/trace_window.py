"""Load a monitor's data windows from the database into the detectors' shapes.

Trace windows become ``detectors.records.TraceRecord`` lists following the contract in
``detectors/records.py``: epoch-float times, spans as steps in step order, every score of
the trace (the detector hides the ones created after ``now``), and input/output
embeddings from the streams ``<agent>.input`` / ``<agent>.output`` joined on
``trace_id``. Scores are read with the project's score roles (:mod:`app.scores.roles`):
a name's role is its kind, and a ``true`` score is a label when its source is one of the
project's label sources (by default ``delayed`` and ``human``). FM-6's embedding windows
are :mod:`app.monitors.windows.vectors`'.

What a window holds at volume is sampled, never cut to the newest rows: traces by
:mod:`app.monitors.windows.sampling` (eval traces whole, production by group hash), and the count
statistics still see every trace through their step profiles
(:mod:`app.monitors.windows.profiles`). Windows are read through
:class:`app.monitors.windows.cache.WindowCache` when the scheduler runs several monitors in one
cycle, so each is loaded once. The rows themselves are read by :mod:`app.monitors.windows.rows`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Engine, Select, or_, select
from sqlalchemy.orm import Session

from app.db import one_of
from app.models import Embedding, Trace
from app.monitors.windows import profiles as step_profiles
from app.monitors.windows import rows as window_rows
from app.monitors.windows import sampling
from app.monitors.windows.step_cache import StepCache
from app.scores.roles import DEFAULT_ROLES, ScoreRoles
from detectors import records
from detectors.step_profiles import RecordWindow, step_profile

DEFAULT_MAX_TRACES = 20_000


@dataclass(frozen=True)
class TraceSelection:
    """Which traces a monitor reads; ``max_traces`` caps the *production* traces loaded
    per window (a sample beyond it: :func:`app.monitors.windows.sampling.plan_sample`)."""

    project_id: int
    agent: str | None = None
    source: str | None = None
    max_traces: int = DEFAULT_MAX_TRACES
    # The project's score roles, applied to every score as it is read (app/scores/roles.py).
    roles: ScoreRoles = DEFAULT_ROLES
    # Only this agent version's traces (a version baseline: app/monitors/decision/version_baseline.py).
    agent_version: str | None = None


@dataclass(frozen=True)
class TraceWindow:
    records: list[records.TraceRecord]
    sample: sampling.SamplePlan
    # A sampled window's step profiles over every trace (app/monitors/windows/profiles.py).
    profiles: step_profiles.WindowProfiles | None = None

    def evidence(self) -> dict[str, Any]:
        """What the run's evidence records of this window."""
        found = self.sample.evidence()
        if self.profiles is not None:
            found["step_profiles"] = self.profiles.evidence()
        return found


_KEY_COLUMNS = (Trace.trace_id, Trace.source, Trace.input_hash, Trace.counterfactual_of)
_PROFILE_KEY_COLUMNS = (Trace.project_id, Trace.step_profile, Trace.updated_at)


def in_window(
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
    session: Session, sel: TraceSelection, **bounds: Any
) -> list[records.TraceRecord]:
    """The (sampled) traces that started in ``[start, end)``, oldest first: the records of
    :func:`load_trace_window` (keywords as it takes them)."""
    return load_trace_window(session, sel, **bounds).records


def load_trace_window(
    session: Session,
    sel: TraceSelection,
    *,
    start: datetime,
    end: datetime,
    as_of: datetime | None = None,
    with_embeddings: bool = True,
    profile_writer: Engine | None = None,
    step_cache: StepCache | None = None,
) -> TraceWindow:
    """The traces that started in ``[start, end)`` as records (:func:`records.from_rows`),
    sampled beyond ``sel.max_traces`` production traces, with the sample's description.

    With ``as_of`` (the run's ``now``) a replayed run sees what a live one would have:
    traces that had ended by then and scores created by then. A sampled window's records
    come as a :class:`~detectors.step_profiles.RecordWindow` with every trace's step
    profile counted; profiles computed on the way are written through ``profile_writer``.
    With a ``step_cache`` (the scheduler's, :mod:`app.monitors.windows.step_cache`) the steps of
    traces unchanged since the last cycle are reused and their spans not read.
    """
    pid = sel.project_id
    keys: list[Any] = list(
        session.execute(
            in_window(select(*_KEY_COLUMNS, *_PROFILE_KEY_COLUMNS), sel, start, end, as_of)
        ).mappings()
    )
    plan = sampling.plan_sample(keys, max_production=sel.max_traces)
    tally = None
    if plan.rate < 1.0:
        tally = step_profiles.count_window(
            keys,
            sampled=set(plan.trace_ids),
            load_chunk=lambda ids: window_rows.chunk_records(
                session, ids, project_id=pid, as_of=as_of, scores=False
            ),
            write_engine=profile_writer,
        )
    updated = None
    if step_cache is not None:
        chosen = set(plan.trace_ids)
        updated = {k["trace_id"]: k["updated_at"] for k in keys if k["trace_id"] in chosen}
    del keys
    # Rows are fetched by explicit id lists in chunks: a plain index lookup per chunk,
    # whatever the planner thinks of the window on a freshly loaded table. Each chunk
    # becomes records before the next is read, so the window's raw rows never sit in
    # memory all at once beside its records: two 20,000-trace windows took 188 MB resident
    # instead of 371 MB (bench/scale's traffic at 10,000 traces/h).
    out: list[records.TraceRecord] = []
    for chunk in window_rows.chunks(plan.trace_ids):
        out += window_rows.chunk_records(
            session,
            chunk,
            project_id=pid,
            roles=sel.roles,
            as_of=as_of,
            cache=step_cache,
            updated=updated,
        )
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
    return {
        r.trace_id: step_profile(r.steps)
        for chunk in window_rows.chunks(trace_ids)
        for r in window_rows.chunk_records(
            session, chunk, project_id=project_id, as_of=None, scores=False
        )
    }


def with_trace_embeddings(session: Session, window: TraceWindow, *, project_id: int) -> TraceWindow:
    """The window with each record's ``<agent>.input`` / ``<agent>.output`` vectors
    (the last row of each wins, as in :func:`records.from_rows`)."""
    agents = {r.trace_id: r.agent for r in window.records}
    streams = [f"{a}.{side}" for a in set(agents.values()) for side in ("input", "output")]
    found: dict[tuple[str, str], np.ndarray] = {}
    dialect = session.get_bind().dialect.name
    for chunk in window_rows.chunks(list(agents)):
        for row in session.execute(
            select(Embedding.trace_id, Embedding.stream, Embedding.vector)
            .where(
                Embedding.project_id == project_id,
                one_of(Embedding.trace_id, chunk, dialect),
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
