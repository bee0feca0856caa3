"""Read models for the pages that no API answer gives: the overview, grouped by failure mode."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db import as_utc
from app.models import Alert, DetectorRun, IngestMinute, Monitor, Span, Trace
from app.models.base import utcnow
from app.monitors import store as monitors
from app.monitors.readiness import report as readiness
from app.monitors.windows import history
from app.web import health, run_chart

SPARK_RUNS = 48  # verdicts a card's sparkline shows
COUNTS_TTL_S = 60.0  # how long the overview reuses a window's readiness counts


class ExpiringCounts:
    """Readiness counts of a window, kept for ``ttl`` seconds across page loads.

    Counting a window's traces, spans and scores takes about a second at 100k traces an
    hour on PostgreSQL, and the overview asks for the same window (its "now" floored to
    the minute) on every load: readiness moves over hours, so a minute-old count serves.
    Only windows of at least ``min_traces`` traces are kept: a small one costs little to
    count, and a project's first traces must show at once. Keys carry the project (in the
    selection) and the window bounds.
    """

    def __init__(
        self, ttl: float = COUNTS_TTL_S, clock: Any = time.monotonic, min_traces: int = 10_000
    ) -> None:
        self.ttl, self.clock, self.min_traces = ttl, clock, min_traces
        self._items: dict[Any, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return True

    def get(self, key: Any) -> Any:
        with self._lock:
            found = self._items.get(key)
        return found[1] if found is not None and found[0] > self.clock() else None

    def __setitem__(self, key: Any, value: Any) -> None:
        if getattr(value, "traces", 0) < self.min_traces:
            return
        now = self.clock()
        with self._lock:
            self._items = {k: v for k, v in self._items.items() if v[0] > now}
            self._items[key] = (now + self.ttl, value)


_OVERVIEW_COUNTS: dict[str, ExpiringCounts] = {}  # per database


def overview_counts(session: Session) -> ExpiringCounts:
    """The overview's counts kept for this session's database (keys name the project)."""
    return _OVERVIEW_COUNTS.setdefault(str(session.get_bind().engine.url), ExpiringCounts())


# Modes no project is expected to watch until it has what they read: their card shows only
# once a monitor exists (JUDGE: made with an evaluator that predicts an objective; ISSUES:
# made through POST /api/v1/monitors, not yet among the defaults).
OPT_IN = frozenset({"JUDGE", "ISSUES"})
FAILURE_MODES = {
    "FM-1": "Compounding decision errors",
    "FM-2": "Tool failure cascades",
    "FM-3": "Non-deterministic output drift",
    "FM-4": "Ground-truth absence",
    "FM-5": "Eval-harness overfitting",
    "FM-6": "Silent degradation (embedding drift)",
    "FM-7": "Proxy goal convergence",
    "OUTCOME": "Outcomes (task success, errors, latency)",
    "SILENCE": "Silence (traffic or a signal that stops)",
    "EARLY": "First hours (static guards until the calibrated monitors speak)",
    "JUDGE": "Judge agreement (an evaluator's judge against the labels)",
    "ISSUES": "Failure issues (new or rising ways of failing)",
}


def overview(session: Session, *, project_id: int) -> dict[str, Any]:
    """Per failure mode: its monitors with their latest run and data readiness, and its
    open alerts; plus the events ingested per type in the last hour."""
    found = monitors.list_monitors(session, project_id=project_id)
    open_alerts = dict(
        session.execute(
            select(Alert.failure_mode, func.count())
            .where(Alert.project_id == project_id, Alert.state.in_(("firing", "acknowledged")))
            .group_by(Alert.failure_mode)
        ).all()
    )
    by_monitor = dict(
        session.execute(
            select(Alert.monitor_id, func.count())
            .where(Alert.project_id == project_id, Alert.state.in_(("firing", "acknowledged")))
            .group_by(Alert.monitor_id)
        ).all()
    )
    modes = []
    # The defaults share one window: one "now" for every monitor, so it is counted once,
    # and floored to the minute, so that loads within a minute reuse the counts.
    counts = overview_counts(session)
    now = utcnow().replace(second=0, microsecond=0)
    first_data = first_trace_at(session, project_id=project_id)
    for fm, title in FAILURE_MODES.items():
        if fm in OPT_IN and not any(m.failure_mode == fm for m in found):
            continue  # made with what it watches (an evaluator with an objective), not a gap
        rows = [
            monitor_row(
                session,
                m,
                now=now,
                first_data=first_data,
                counts=counts,
                open_alerts=by_monitor.get(m.id, 0),
            )  # fmt: skip
            for m in found
            if m.failure_mode == fm
        ]
        modes.append(
            {"id": fm, "title": title, "monitors": rows, "open_alerts": open_alerts.get(fm, 0)}
        )
    since = now - timedelta(hours=1)
    rate = dict(
        session.execute(
            select(IngestMinute.type, func.sum(IngestMinute.events))
            .where(IngestMinute.project_id == project_id, IngestMinute.minute >= since)
            .group_by(IngestMinute.type)
        ).all()
    )
    # OTLP traces arrive as spans (their trace rows are merged, not counted as events):
    # count the traces that started in the last hour, whatever carried them.
    # ``now`` is floored to the minute: the hour runs to the end of the current minute, so
    # a trace sent seconds ago (a newcomer's first) is counted.
    until = now + timedelta(minutes=1)
    rate["trace"] = max(
        int(rate.get("trace") or 0), traces_started(session, project_id, since, until)
    )
    return {
        "modes": modes,
        "ingest_last_hour": rate,
        "has_monitors": bool(found),
        "has_data": first_data is not None,
    }


def first_trace_at(session: Session, *, project_id: int) -> datetime | None:
    """The project's earliest trace start (an index seek on (project_id, started_at))."""
    return session.scalar(select(func.min(Trace.started_at)).where(Trace.project_id == project_id))


def traces_started(session: Session, project_id: int, since: datetime, until: datetime) -> int:
    return int(
        session.scalar(
            select(func.count())
            .select_from(Trace)
            .where(
                Trace.project_id == project_id, Trace.started_at >= since, Trace.started_at <= until
            )
        )
        or 0
    )


def monitor_row(
    session: Session,
    monitor: Monitor,
    *,
    now: datetime,
    first_data: datetime | None,
    open_alerts: int,
    counts: readiness.CountsCache | None = None,
) -> dict[str, Any]:
    """One monitor as a card shows it: health in words, last verdict, last run, readiness."""
    last_run = monitors.latest_run(session, monitor_id=monitor.id)
    verdicts = monitors.list_runs(session, monitor_id=monitor.id, status="ok", limit=SPARK_RUNS)
    verdict = verdicts[-1] if verdicts else None
    name = health.STATISTIC_NAMES.get(monitor.failure_mode, "statistic")
    spark = run_chart.sparkline(
        [run_chart.RunPoint(r.at, r.statistic, r.threshold, r.fired, r.status) for r in verdicts],
        label=f"{name} of the last {len(verdicts)} verdicts",
    )
    ready = readiness.monitor_readiness(
        session, monitor=monitor, now=now, counts_cache=counts if counts is not None else {}
    )
    return {
        "monitor": monitor,
        "run": last_run,
        "sparkline": spark,
        "health": health.health(
            monitor,
            open_alerts=open_alerts,
            verdict=verdict,
            last_run=last_run,
            first_data=first_data,
            now=now,
            judged=bool((monitor.selection or {}).get("young_windows"))
            and history.judges_an_objective(session, project_id=monitor.project_id),
        ),  # fmt: skip
        "readiness": ready,
        "run_note": run_note(monitor, last_run, first_data=first_data, readiness=ready),
    }


def run_note(
    monitor: Monitor,
    last_run: DetectorRun | None,
    *,
    first_data: datetime | None,
    readiness: dict[str, Any],
) -> str | None:
    """What a card says under the last run when that run predates the data the readiness
    panel counts (None: the run's own reason stands).

    A run from before the first trace said "no tool calls in current window" right above a
    panel counting 174 tool steps; its reason is history, the next run reads the counts.
    """
    if last_run is None or last_run.status == "ok" or not monitor.enabled:
        return None
    at = as_utc(last_run.at)
    before_data = first_data is not None and at < as_utc(first_data)
    if not before_data and "last_run" in readiness:
        return None  # the run read the window as it is now: its reason is current
    due = at + timedelta(seconds=monitor.interval_seconds)
    why = "before the first trace" if before_data else "before the data now in its window"
    return (
        f"That run came {why}; the next, due {due.strftime('%H:%M')} UTC, reads the counts below."
    )


def trace_totals(
    session: Session, *, project_id: int, trace_ids: list[str]
) -> dict[str, dict[str, float | None]]:
    """Tokens and cost summed over each listed trace's spans (one grouped read over the
    spans' unique index, bounded by the page's 50 ids); a trace without either is absent."""
    if not trace_ids:
        return {}
    tokens = func.coalesce(
        Span.total_tokens,
        func.coalesce(Span.input_tokens, 0) + func.coalesce(Span.output_tokens, 0),
    )
    rows = session.execute(
        select(Span.trace_id, func.sum(tokens), func.sum(Span.cost))
        .where(Span.project_id == project_id, Span.trace_id.in_(trace_ids))
        .group_by(Span.trace_id)
    )
    return {
        tid: {"tokens": int(t) if t else None, "cost": float(c) if c is not None else None}
        for tid, t, c in rows
    }
