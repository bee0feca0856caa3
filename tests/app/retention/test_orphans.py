"""Spans and span events whose trace row never came: deleted by their own time, else a
retention after their trace was first seen without its row; young ones stay, and a trace
row that comes late keeps its spans. On both databases (on PostgreSQL the rows without a
time sit in the DEFAULT partition, which no partition drop reaches)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, func, select

from app.db import write_session
from app.models import OrphanTrace, Span, SpanEvent, Trace
from app.models.base import utcnow
from app.retention.purge import purge_all
from tests.app.engine_helpers import setup_project

NOW = utcnow()
DAY = timedelta(days=1)
FAR = datetime(9999, 12, 30, tzinfo=NOW.tzinfo)


def _pieces(engine: Engine, pid: int, trace_id: str, at: datetime | None, n: int = 3) -> None:
    """``n`` spans and a span event of ``trace_id``, all dated ``at``, and no trace row."""
    with write_session(engine) as s:
        s.add_all(
            Span(project_id=pid, trace_id=trace_id, span_id=f"s{i}", started_at=at)
            for i in range(n)
        )
        s.add(SpanEvent(project_id=pid, trace_id=trace_id, span_id="s0", name="gen_ai.choice",
                        time=at))  # fmt: skip


def _kept(engine: Engine, model: Any) -> dict[str, int]:
    with engine.connect() as conn:
        rows = conn.execute(select(model.trace_id, func.count()).group_by(model.trace_id))
        return dict(rows.all())


def test_orphans_go_by_their_own_time_or_a_retention_after_first_seen(engine: Engine) -> None:
    pid = setup_project(engine)
    for k in range(3):  # more traces than one batch holds
        _pieces(engine, pid, f"old-{k}", NOW - 40 * DAY, n=50 if k == 0 else 3)
    _pieces(engine, pid, "timeless", None, n=50)
    _pieces(engine, pid, "young", NOW - DAY)
    _pieces(engine, pid, "far-ahead", FAR)

    deleted = purge_all(engine, default_days=30, now=NOW, batch=2)

    assert deleted["spans"] == 56 and deleted["span_events"] == 3
    left = {"timeless": 50, "young": 3, "far-ahead": 3}
    assert _kept(engine, Span) == left
    assert set(_kept(engine, SpanEvent)) == set(left)

    # Half a day short of a retention on, the young spans' own time has passed the cutoff;
    # the timeless and far-ahead traces have not waited long enough.
    purge_all(engine, default_days=30, now=NOW + 29.5 * DAY, batch=2)
    assert _kept(engine, Span) == {"timeless": 50, "far-ahead": 3}

    purge_all(engine, default_days=30, now=NOW + 31 * DAY, batch=2)
    assert _kept(engine, Span) == {} and _kept(engine, SpanEvent) == {}
    with engine.connect() as conn:  # nothing left to remember
        assert conn.scalar(select(func.count()).select_from(OrphanTrace)) == 0


def test_a_late_trace_row_keeps_its_spans_and_other_projects_orphans_stay(engine: Engine) -> None:
    pid, other = setup_project(engine, "p1"), setup_project(engine, "p2")
    _pieces(engine, pid, "late", None)
    _pieces(engine, other, "late", None)
    purge_all(engine, default_days=30, now=NOW)  # both first seen without a trace row
    with write_session(engine) as s:
        s.add(Trace(project_id=pid, trace_id="late", created_at=NOW + DAY))

    purge_all(engine, default_days=30, now=NOW + 31 * DAY)

    with engine.connect() as conn:
        kept = conn.execute(select(Span.project_id, func.count()).group_by(Span.project_id))
        assert dict(kept.all()) == {pid: 3}
        sightings = conn.execute(select(OrphanTrace.project_id, OrphanTrace.trace_id)).all()
    assert sightings == []  # the trace row came: nothing left to wait for
