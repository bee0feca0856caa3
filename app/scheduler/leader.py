"""Once per interval across processes: a compare-and-set claim in the database.

A process may run a monitor only after it moved the monitor's ``next_run_at`` from a due
value to the next slot with ``UPDATE .. WHERE id = ? AND next_run_at <= now``. On
PostgreSQL a concurrent UPDATE of the same row waits for the first to commit and then
re-checks the WHERE clause against the new value (READ COMMITTED), so exactly one
process sees ``rowcount == 1``; on SQLite writers are serialised. Missed slots are
coalesced into one run (the schedule re-anchors on it). Named periodic jobs use the same
scheme on ``scheduler_leases``.

The same UPDATE marks the run as claimed (``claimed_slot``) until ``claim_expires_at``,
and the claimer releases it once the run is recorded. A claim never released means the
process stopped during the run: :mod:`app.scheduler.interrupted` records that run as
failed once the claim expires and makes the monitor due at once, instead of losing the
slot until the next interval. While a claim holds, the monitor is not due, so a run
longer than its interval never overlaps its next one; the next one runs when it ends.

Intervals below :data:`~app.monitors.schemas.MIN_INTERVAL_SECONDS` (allowed before that
floor existed) are scheduled at the floor.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from sqlalchemy import Engine, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from app.db import write_transaction
from app.models import Monitor, SchedulerLease
from app.monitors.schemas import MIN_INTERVAL_SECONDS

# A run this late (as a share of the interval) re-anchors the schedule on itself.
REANCHOR_LATENESS = 0.1
# A run waits for a detector slot and then detects, each for up to the monitor's time
# limit; loading its windows and recording it take the rest. A claim lasts twice the time
# limit and this margin: past that, no live run is still going (see run_lease_s).
CLAIM_MARGIN_S = 120.0


class DueMonitor(NamedTuple):
    monitor_id: int
    project_id: int
    slot: datetime | None  # its next_run_at; None: never scheduled
    interval_s: float  # at least the floor
    lease_s: float  # how long its claimed run may go unrecorded before it is taken for dead


def run_lease_s(time_limit_s: float) -> float:
    """How long a claimed run of a monitor with this time limit may take.

    >>> run_lease_s(60.0)
    240.0
    """
    return 2.0 * time_limit_s + CLAIM_MARGIN_S


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


def due_monitors(
    engine: Engine, *, now: datetime, min_interval_s: float = MIN_INTERVAL_SECONDS
) -> list[DueMonitor]:
    """The enabled monitors whose slot has come and that no run holds, most overdue first."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(
                Monitor.id,
                Monitor.project_id,
                Monitor.next_run_at,
                Monitor.interval_seconds,
                Monitor.time_limit_seconds,
            )
            .where(
                Monitor.enabled.is_(True),
                or_(Monitor.next_run_at.is_(None), Monitor.next_run_at <= now),
                Monitor.claimed_slot.is_(None),
            )
            .order_by(Monitor.next_run_at, Monitor.id)
        ).all()
    return [
        DueMonitor(
            r.id,
            r.project_id,
            r.next_run_at,
            max(float(r.interval_seconds), min_interval_s),
            run_lease_s(r.time_limit_seconds),
        )
        for r in rows
    ]


def claim_monitor(
    engine: Engine,
    *,
    monitor_id: int,
    slot: datetime | None,
    interval_s: float,
    lease_s: float,
    now: datetime,
) -> datetime | None:
    """Move the monitor's schedule forward and claim its run for ``lease_s``; return the
    slot won, or None if another process did (or still holds a run of it)."""
    won = slot if slot is not None else now
    after = next_slot(won, interval_s, now)
    with write_transaction(engine) as conn:
        result = conn.execute(
            update(Monitor)
            .where(
                Monitor.id == monitor_id,
                Monitor.enabled.is_(True),
                or_(Monitor.next_run_at.is_(None), Monitor.next_run_at <= now),
                Monitor.claimed_slot.is_(None),
            )
            .values(
                next_run_at=after,
                claimed_slot=won,
                claim_expires_at=now + timedelta(seconds=lease_s),
            )
        )
    return won if result.rowcount == 1 else None


def release_claim(engine: Engine, *, monitor_id: int, slot: datetime) -> None:
    """The claimed run of ``slot`` has ended (recorded, or failed outside the detector)."""
    with write_transaction(engine) as conn:
        conn.execute(
            update(Monitor)
            .where(Monitor.id == monitor_id, Monitor.claimed_slot == slot)
            .values(claimed_slot=None, claim_expires_at=None)
        )


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
