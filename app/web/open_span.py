"""How long an alert has been open, on the clock its data keep, not only the wall clock's.

Grafana and Datadog count "firing for" from the first firing to now, which is right while
the monitor keeps evaluating: an alert firing since 09:00 and evaluated a minute ago has
fired for as long as the wall clock says. An alert raised by a replay (the demo, a
backfill) was evaluated on timestamps in the past, and nothing has evaluated it since:
counted to the wall clock, one two hours long read "acknowledged for 33d 16h". So when
the last evaluation (the monitor's latest run up to the end, or the last firing) lies
more than two of the monitor's intervals behind that end (the same two intervals after
which readiness no longer takes a run for the current window), the span stops there and
says so: "acknowledged for 2h 10m, until its last evaluation at 2026-10-31 14:00 UTC
(33d 14h ago)". A live alert reads as in Grafana.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import Alert, DetectorRun, Monitor
from app.web.alert_view import duration

DEFAULT_INTERVAL_S = 900  # a deleted monitor's alert: the defaults' interval


@dataclass(frozen=True)
class OpenSpan:
    """``duration`` in words; ``until``: the last evaluation it stops at when the alert's
    clock is behind (None: counted to now, or to its resolution); ``behind``: by how much."""

    duration: str
    until: datetime | None = None
    behind: str | None = None

    def __str__(self) -> str:
        if self.until is None:
            return self.duration
        at = self.until.strftime("%Y-%m-%d %H:%M")
        return f"{self.duration}, until its last evaluation at {at} UTC ({self.behind} ago)"


def open_span(
    alert: Alert, *, evaluated: datetime | None, interval_s: int | None, now: datetime
) -> OpenSpan:
    """``alert``'s open span: from its first firing to its resolution or ``now``, or to its
    last evaluation (``evaluated``, at least its last firing) when that is stale."""
    end = alert.resolved_at or now
    last = max(t for t in (evaluated, alert.last_fired_at) if t is not None)
    stale = timedelta(seconds=2 * (interval_s or DEFAULT_INTERVAL_S))
    if end - last <= stale:
        return OpenSpan(duration(end - alert.first_fired_at))
    return OpenSpan(duration(last - alert.first_fired_at), last, duration(now - last))


def last_evaluations(
    session: Session, monitor_ids: list[int], *, until: datetime
) -> dict[int, datetime]:
    """Each monitor's latest run at or before ``until`` (one seek per monitor on
    ``(monitor_id, at)``)."""
    if not monitor_ids:
        return {}
    rows = session.execute(
        select(DetectorRun.monitor_id, func.max(DetectorRun.at))
        .where(DetectorRun.monitor_id.in_(sorted(set(monitor_ids))), DetectorRun.at <= until)
        .group_by(DetectorRun.monitor_id)
    )
    return {int(m): at for m, at in rows if at is not None}


def alert_open_span(
    session: Session, alert: Alert, monitor: Monitor | None, *, now: datetime
) -> OpenSpan:
    """The open span of one alert (its page)."""
    end = alert.resolved_at or now
    found = last_evaluations(session, [alert.monitor_id] if alert.monitor_id else [], until=end)
    evaluated = found.get(alert.monitor_id) if alert.monitor_id else None
    return open_span(
        alert, evaluated=evaluated, interval_s=monitor.interval_seconds if monitor else None,
        now=now,
    )  # fmt: skip


def list_spans(session: Session, alerts: list[Alert], *, now: datetime) -> dict[int, str]:
    """The open span of each open alert of a list, by alert id (resolved ones: none). An open
    alert's last evaluation is its monitor's ``last_run_at`` (every recorded run sets it)."""
    open_ = [a for a in alerts if a.resolved_at is None and a.state != "resolved"]
    ids = sorted({a.monitor_id for a in open_ if a.monitor_id is not None})
    monitors: dict[int, tuple[int, datetime | None]] = {
        int(m): (int(n), last)
        for m, n, last in session.execute(
            select(Monitor.id, Monitor.interval_seconds, Monitor.last_run_at).where(
                Monitor.id.in_(ids)
            )
        )
    }
    spans = {}
    for a in open_:
        interval_s, evaluated = monitors.get(a.monitor_id or 0, (None, None))
        spans[a.id] = str(open_span(a, evaluated=evaluated, interval_s=interval_s, now=now))
    return spans
