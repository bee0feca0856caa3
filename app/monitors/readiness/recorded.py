"""Readiness counts kept by a run, so the overview need not count a window on load.

Counting a window's traces, spans and scores (:func:`app.monitors.readiness.counts.window_counts`)
takes about a second at 100k traces/h on PostgreSQL; the overview showed it for every
monitor on every cold load. A run reads the same window anyway: :func:`count_for_run`
counts it once per cycle (the cycle's monitors with one selection and window share it)
and the run keeps the answer (``detector_runs.readiness_counts``, written by
:func:`as_json`). :func:`from_run` hands them back to the readiness report when they still
describe the window a run now would read:

* the run is the monitor's latest and its window ended at most two intervals before
  "now" (as :func:`app.monitors.readiness.report._last_run` judges a run "on the window as
  it is now": one late or slow cycle does not send every page back to counting), and at
  most a minute after it (the overview floors its "now" to the minute);
* the window has the length a run now would read (the policy may have changed since);
* the selection (agent, source) and the project's score roles are those counted with.

Anything else, and the report counts as before. The counts are the same numbers either
way; only the window they were taken on differs, and the report then names the run's.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, fields
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from app.db import as_utc
from app.models import DetectorRun
from app.monitors.readiness.counts import WindowCounts, window_counts
from app.monitors.windows.cache import WindowCache
from app.monitors.windows.trace_window import TraceSelection

log = logging.getLogger(__name__)
# The overview floors its "now" to the minute: a run may have ended its window just after.
AHEAD = timedelta(seconds=60)
_FIELDS = {f.name for f in fields(WindowCounts)}


def readiness_selection(sel: TraceSelection) -> TraceSelection:
    """The selection the readiness report counts with: no version, no cap on traces."""
    return TraceSelection(
        project_id=sel.project_id, agent=sel.agent, source=sel.source, roles=sel.roles
    )


def count_for_run(
    data: Session, sel: TraceSelection, *, start: datetime, end: datetime, cycle: WindowCache
) -> dict[str, Any] | None:
    """The window's readiness counts as a run keeps them, counted once per cycle; None when
    counting failed (the run goes on: the overview will count for itself)."""
    rsel = readiness_selection(sel)

    def count() -> WindowCounts:
        # In a savepoint: a failed count leaves the run's transaction usable.
        with data.begin_nested():
            return window_counts(data, rsel, start=start, end=end, as_of=end)

    try:
        counts = cycle.counts(("readiness", rsel, start, end), count)
    except Exception:  # never the run's failure: readiness is a page's aid
        log.exception("readiness counts for %s [%s, %s) failed", rsel, start, end)
        return None
    return as_json(counts, rsel, start=start, end=end)


def as_json(
    counts: WindowCounts, sel: TraceSelection, *, start: datetime, end: datetime
) -> dict[str, Any]:
    return {
        "agent": sel.agent,
        "source": sel.source,
        "roles": [list(r) for r in sel.roles.roles],
        "label_sources": list(sel.roles.label_sources),
        "start": start.isoformat(),
        "end": end.isoformat(),
        "counts": asdict(counts),
    }


def from_run(
    run: DetectorRun | None,
    sel: TraceSelection,
    *,
    now: datetime,
    window: timedelta,
    interval_seconds: int,
) -> WindowCounts | None:
    """The run's counts if they describe the window a run at ``now`` would read (see the
    module's notes), with ``recorded_by`` naming the run and its window; else None."""
    kept = run.readiness_counts if run is not None else None
    if run is None or not kept:
        return None
    try:
        start, end = datetime.fromisoformat(kept["start"]), datetime.fromisoformat(kept["end"])
        same = (
            kept["agent"] == sel.agent
            and kept["source"] == sel.source
            and [tuple(r) for r in kept["roles"]] == list(sel.roles.roles)
            and tuple(kept["label_sources"]) == tuple(sel.roles.label_sources)
        )
        age = now - as_utc(end)
        if not same or end - start != window:
            return None
        if not -AHEAD <= age <= timedelta(seconds=2 * interval_seconds):
            return None
        values = {k: v for k, v in kept["counts"].items() if k in _FIELDS}
        values["score_names"] = [tuple(s) for s in values.get("score_names", [])]
        counts = WindowCounts(**values)
    except (KeyError, TypeError, ValueError):  # written by another version: count instead
        return None
    counts.recorded_by = {
        "run_id": run.id,
        "at": as_utc(run.at).isoformat(),
        "start": as_utc(start).isoformat(),
        "end": as_utc(end).isoformat(),
    }
    return counts
