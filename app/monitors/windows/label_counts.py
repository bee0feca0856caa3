"""FM-4's label coverage and delay counted over every trace of a window, in SQL.

A window at volume is loaded as a sample (:mod:`app.monitors.windows.sampling`). FM-4's coverage
(the share of production traces with a ground-truth label) and its label delays are
counts, and the labeling queue acts on them per cohort, so they are counted over every
trace of the window instead of estimated from the sample: one query reads each
production trace's cohort (agent, version, ``task_type`` attribute), its end and the
creation time of its latest label visible at the run's ``now`` (the scores are grouped
per trace first, then joined), which
:class:`detectors.ground_truth.label_coverage.LabelCounts` turns into the per-cohort
figures. Labels follow the project's score roles (:func:`app.scores.roles.is_label`),
as the records do.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from app.ingest.score_values import stored_in_range
from app.models import Score, Trace
from app.monitors.windows.cache import WindowCache
from app.monitors.windows.rows import plain_times
from app.monitors.windows.trace_window import TraceSelection, TraceWindow, in_window
from app.scores import roles as score_roles
from detectors.ground_truth.label_coverage import LabelCounts
from detectors.step_profiles import RecordWindow
from detectors.stored_times import epoch_seconds


def with_label_counts(
    session: Session,
    window: TraceWindow,
    sel: TraceSelection,
    *,
    start: datetime,
    end: datetime,
    cache: WindowCache | None,
) -> RecordWindow:
    """The window's records with its label counts (:func:`count_labels`, as of ``end``,
    once per cycle where a ``cache`` is given); the records stay the cached ones."""

    def count() -> LabelCounts:
        return count_labels(session, sel, start=start, end=end, as_of=end)

    counts = cache.counts(("labels", sel, start, end), count) if cache is not None else count()
    return RecordWindow(
        window.records,
        step_profiles=getattr(window.records, "step_profiles", None),
        label_counts=counts,
    )


def count_labels(
    session: Session, sel: TraceSelection, *, start: datetime, end: datetime, as_of: datetime
) -> LabelCounts:
    """Every production trace of the window ``[start, end)`` (ended by ``as_of``) by cohort,
    with its latest label created by ``as_of``."""
    dialect = session.get_bind().dialect.name
    window_ids = in_window(select(Trace.trace_id), sel, start, end, as_of)
    latest = (
        select(Score.trace_id, func.max(Score.created_at).label("label_at"))
        .where(
            Score.project_id == sel.project_id,
            Score.trace_id.in_(window_ids.scalar_subquery()),
            Score.created_at <= as_of,
            score_roles.is_label(sel.roles),
            stored_in_range(Score.value),  # as the records load them (rows.chunk_records)
        )
        .group_by(Score.trace_id)
        .subquery()
    )
    ended_at, label_at = plain_times((Trace.ended_at, latest.c.label_at), dialect)
    q = in_window(
        select(
            Trace.agent,
            Trace.agent_version,
            Trace.attributes["task_type"].as_string(),
            ended_at,
            label_at,
        ).outerjoin(latest, latest.c.trace_id == Trace.trace_id),
        sel,
        start,
        end,
        as_of,
    ).where(or_(Trace.source.is_(None), Trace.source == "production"))
    rows = []
    for agent, version, task_type, ended, labeled in session.execute(q):
        end_s = epoch_seconds(ended)
        cohort = (str(agent or ""), str(version or ""), "" if task_type is None else str(task_type))
        rows.append((cohort, end_s, None if labeled is None else epoch_seconds(labeled, end_s)))
    return LabelCounts.from_rows(rows)
