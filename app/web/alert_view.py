"""What the alert page shows beyond the alert row: how long it has fired, the monitor's runs
charted around it, example traces (failing current ones beside reference ones), the
evidence as tables and the history with repeats folded."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.alerts import lifecycle, sentences
from app.models import Alert, AlertEvent, DetectorRun, Monitor, Trace
from app.monitors import store as monitors
from app.web import evidence_view, run_chart

EXAMPLES = 5


# What the system repeats while an alert stays open: folded together into one row.
ROUTINE = frozenset({"repeat", "notified"})


@dataclass(frozen=True)
class HistoryRow:
    first: datetime
    last: datetime
    kind: str
    from_state: str | None
    to_state: str | None
    actor: str
    count: int
    kinds: tuple[tuple[str, int], ...] = ()

    @property
    def what(self) -> str:
        """``repeat ×26 · notified ×9`` for a folded row, the kind for a single event."""
        if self.count == 1:
            return self.kind
        return " · ".join(f"{k} ×{n}" for k, n in self.kinds)


def duration(delta: timedelta) -> str:
    """``2d 3h``, ``3h 05m``, ``12m``: how long, in words on-call reads at a glance.

    >>> duration(timedelta(hours=27, minutes=4)), duration(timedelta(minutes=12))
    ('1d 3h', '12m')
    """
    minutes = max(0, int(delta.total_seconds() // 60))
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    return f"{hours}h {mins:02d}m" if hours else f"{mins}m"


def folded_history(events: list[AlertEvent]) -> list[HistoryRow]:
    """Consecutive events of one kind, states and actor become one row with a count, and
    so do the routine repeats and re-notifications of an open alert (34 "repeat firing ->
    firing" rows and their reminders read as one row)."""

    def key(e: AlertEvent) -> tuple[str, str | None, str | None, str]:
        return ("routine" if e.kind in ROUTINE else e.kind, e.from_state, e.to_state, e.actor)

    runs: list[list[AlertEvent]] = []
    for e in events:
        if runs and key(runs[-1][-1]) == key(e):
            runs[-1].append(e)
        else:
            runs.append([e])
    rows = []
    for run in runs:
        first, last = run[0], run[-1]
        kinds: dict[str, int] = {}
        for e in run:
            kinds[e.kind] = kinds.get(e.kind, 0) + 1
        rows.append(
            HistoryRow(
                first.at,
                last.at,
                first.kind,
                first.from_state,
                first.to_state,
                first.actor,
                count=len(run),
                kinds=tuple(kinds.items()),
            )  # fmt: skip
        )
    return rows


def _sentence(
    session: Session, alert: Alert, monitor: Monitor | None, events: list[AlertEvent]
) -> str:
    """The sentence of the run that last fired the alert, worded now, as notifications
    word it (an alert stored before the sentences keeps a numbers-only summary). A
    per-group alert (an alert rule's) keeps its group's own sentence: the run's speaks for
    every group of it."""
    if "group" in (alert.evidence or {}):
        return alert.summary
    for e in reversed(events):
        run_id = (e.detail or {}).get("run_id") if isinstance(e.detail, dict) else None
        if isinstance(run_id, int):
            run = session.get(DetectorRun, run_id)
            if run is not None and run.project_id == alert.project_id:
                return lifecycle.summary(run, scope=monitor.selection if monitor else None)
            break
    return alert.summary


def _iso(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _traces(session: Session, project_id: int, ids: list[str]) -> list[dict[str, Any]]:
    found = {
        t.trace_id: t
        for t in session.scalars(
            select(Trace).where(Trace.project_id == project_id, Trace.trace_id.in_(ids))
        )
    }
    return [
        {
            "trace_id": i,
            "found": i in found,
            "agent": found[i].agent if i in found else "",
            "agent_version": found[i].agent_version if i in found else "",
            "status": found[i].status if i in found else "",
            "started_at": found[i].started_at if i in found else None,
        }
        for i in ids
    ]


def _window_traces(
    session: Session, project_id: int, window: tuple[datetime, datetime], agent: str | None
) -> list[dict[str, Any]]:
    """The latest production traces of a window: the reference's (what normal looked like),
    or the failing window's where the detector named no example."""
    q = select(Trace).where(
        Trace.project_id == project_id,
        Trace.started_at >= window[0],
        Trace.started_at < window[1],
        Trace.source == "production",
    )
    if agent:
        q = q.where(Trace.agent == agent)
    rows = session.scalars(q.order_by(Trace.started_at.desc()).limit(EXAMPLES))
    return [
        {
            "trace_id": t.trace_id,
            "found": True,
            "agent": t.agent,
            "agent_version": t.agent_version,
            "status": t.status,
            "started_at": t.started_at,
        }
        for t in rows
    ]


def _heading(failure_mode: str, monitor_name: str) -> str:
    """The monitor's name without the mode the heading's badge already shows."""
    return monitor_name.removeprefix(failure_mode).strip() or "Alert"


def alert_view(
    session: Session,
    *,
    alert: Alert,
    monitor: Monitor | None,
    events: list[AlertEvent],
    now: datetime,
) -> dict[str, Any]:
    evidence = alert.evidence if isinstance(alert.evidence, dict) else {}
    held: dict[str, Any] = evidence.get("baseline") or {}
    held = held if isinstance(held, dict) else {}
    ref_start, ref_end = _iso(held.get("reference_start")), _iso(held.get("reference_end"))
    reference = (ref_start, ref_end) if ref_start and ref_end and ref_start < ref_end else None
    onset = _iso(held.get("degradation_started_at"))
    closed = alert.resolved_at
    end = closed or now
    marks = run_chart.Marks(
        reference=reference, onset=onset, opened=alert.first_fired_at, closed=closed
    )
    chart = None
    runs: list[run_chart.RunPoint] = []
    failing: tuple[datetime, datetime] | None = None
    if monitor is not None:
        start = min(t for t in (alert.first_fired_at, onset, ref_start) if t is not None)
        span = max(end - alert.first_fired_at, timedelta(hours=2))
        found = monitors.list_runs(
            session,
            monitor_id=monitor.id,
            since=start - timedelta(hours=1),
            until=min(end, alert.last_fired_at + span) + timedelta(hours=1, seconds=1),
        )
        runs = [
            run_chart.RunPoint(r.at, r.statistic, r.threshold, r.fired, r.status) for r in found
        ]
        fired = [r for r in found if r.fired and r.window_start and r.window_end]
        if fired:
            failing = (fired[-1].window_start, fired[-1].window_end)
        name = sentences.STATISTIC_NAMES.get(alert.failure_mode, "statistic")
        chart = run_chart.svg(runs, marks=marks, label=f"{name} per run around alert {alert.id}")
    agent = (monitor.selection or {}).get("agent") if monitor is not None else None
    current = _traces(session, alert.project_id, evidence_view.examples(evidence))
    picked_by_detector = bool(current)
    if not current and failing is not None:
        current = _window_traces(session, alert.project_id, failing, agent)
    return {
        "statistic_name": sentences.STATISTIC_NAMES.get(alert.failure_mode, "statistic"),
        "chart": chart,
        "runs": runs,
        "onset": onset,
        "reference": reference,
        "current_examples": current,
        "current_picked_by_detector": picked_by_detector,
        "reference_examples": (
            _window_traces(session, alert.project_id, reference, agent) if reference else []
        ),
        "tables": evidence_view.tables(evidence),
        "scalars": evidence_view.scalars(evidence),
        "history": folded_history(events),
        "sentence": _sentence(session, alert, monitor, events),
        "heading": _heading(alert.failure_mode, monitor.name if monitor else ""),
    }
