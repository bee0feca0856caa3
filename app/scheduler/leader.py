"""Once per interval across processes: a compare-and-set lease in the database.

A process may run a monitor only after it moved the monitor's ``next_run_at`` from a due
value to the next slot with ``UPDATE .. WHERE id = ? AND next_run_at <= now``. On
PostgreSQL a concurrent UPDATE of the same row waits for the first to commit and then
re-checks the WHERE clause against the new value (READ COMMITTED), so exactly one
process sees ``rowcount == 1``; on SQLite writers are serialised. Missed slots are
coalesced into one run (the schedule re-anchors on it). Named periodic jobs use the same scheme on ``scheduler_leases``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Engine, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from app.db import write_transaction
from app.models import Monitor, SchedulerLease

# A run this late (as a share of the interval) re-anchors the schedule on itself.
REANCHOR_LATENESS = 0.1


def next_slot(slot: datetime, interval_s: float, now: datetime) -> datetime:
    """``slot + interval`` for a run on time, else ``now + interval``.

    A run that starts within :data:`REANCHOR_LATENESS` of an interval after its slot keeps
    the schedule's grid; a later one (missed slots coalesce into it) re-anchors on itself,
    so two runs of a monitor are never less than 90% of an interval apart. Keeping the
    grid for any lateness short of a whole interval let a run made 1.95 s into a 2 s slot
    be followed by the next 0.05 s later (seen in CI on a loaded machine).

    >>> t = datetime(2026, 1, 1)
    >>> next_slot(t, 60, t + timedelta(seconds=1)) == t + timedelta(seconds=60)
    True
    >>> next_slot(t, 2, t + timedelta(seconds=1.95)) == t + timedelta(seconds=3.95)
    True
    """
    step = timedelta(seconds=interval_s)
    if now - slot <= step * REANCHOR_LATENESS:
        return slot + step
    return now + step


def due_monitors(engine: Engine, *, now: datetime) -> list[tuple[int, datetime | None, int]]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(Monitor.id, Monitor.next_run_at, Monitor.interval_seconds)
            .where(
                Monitor.enabled.is_(True),
                or_(Monitor.next_run_at.is_(None), Monitor.next_run_at <= now),
            )
            .order_by(Monitor.next_run_at, Monitor.id)
        ).all()
    return [(r.id, r.next_run_at, r.interval_seconds) for r in rows]


def claim_monitor(
    engine: Engine, *, monitor_id: int, slot: datetime | None, interval_s: float, now: datetime
) -> datetime | None:
    """Move the monitor's lease forward; return the slot won, or None if another did."""
    won = slot if slot is not None else now
    after = next_slot(won, interval_s, now)
    with write_transaction(engine) as conn:
        result = conn.execute(
            update(Monitor)
            .where(
                Monitor.id == monitor_id,
                Monitor.enabled.is_(True),
                or_(Monitor.next_run_at.is_(None), Monitor.next_run_at <= now),
            )
            .values(next_run_at=after)
        )
    return won if result.rowcount == 1 else None


def claim_lease(
    engine: Engine, *, name: str, interval_s: float, now: datetime, holder: str
) -> bool:
    """True when this process may run the periodic job ``name`` for the current interval."""
    with write_transaction(engine) as conn:
        dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
        conn.execute(
            dialect.insert(SchedulerLease)
            .values(name=name, next_run_at=now, holder="")
            .on_conflict_do_nothing()
        )
        result = conn.execute(
            update(SchedulerLease)
            .where(SchedulerLease.name == name, SchedulerLease.next_run_at <= now)
            .values(next_run_at=now + timedelta(seconds=interval_s * 0.9), holder=holder)
        )
    return result.rowcount == 1
