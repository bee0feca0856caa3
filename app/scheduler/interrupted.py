"""Runs whose process stopped: recorded as failed once their claim expires, and run again.

The scheduler claims a run before it starts it (:func:`app.scheduler.leader.claim_monitor`)
and releases the claim once the run is recorded. A process killed in between leaves the
claim standing: the run has no record and, before claims, its slot was lost until the
next interval. Once the claim expires, any scheduler's next tick records the run as
failed (:data:`INTERRUPTED`, the claimed slot as its ``scheduled_for``) and makes the
monitor due at once.

A run that was recorded but whose release was lost (the process died in between) already
has its row for that slot (``detector_runs`` holds one per monitor and slot): then only the
claim is cleared. Two schedulers reaping the same claim race on a compare-and-set of the
claim, as they do on the schedule; the loser does nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import Engine, exists, select, update

from app import metrics
from app.db import write_session
from app.models import DetectorRun, Monitor

log = logging.getLogger("telltale.scheduler")

INTERRUPTED = "interrupted: the process stopped during the run"


def record_interrupted(engine: Engine, *, now: datetime) -> list[DetectorRun]:
    """Record every run whose claim expired unreleased as failed; return those runs."""
    with engine.connect() as conn:
        expired = conn.execute(
            select(
                Monitor.id,
                Monitor.project_id,
                Monitor.name,
                Monitor.failure_mode,
                Monitor.claimed_slot,
            ).where(Monitor.claimed_slot.is_not(None), Monitor.claim_expires_at <= now)
        ).all()
    runs = []
    for m in expired:
        with write_session(engine) as session:
            recorded = session.scalar(
                select(
                    exists().where(
                        DetectorRun.monitor_id == m.id, DetectorRun.scheduled_for == m.claimed_slot
                    )
                )
            )
            cleared = {"claimed_slot": None, "claim_expires_at": None}
            won = session.connection().execute(
                update(Monitor)
                .where(Monitor.id == m.id, Monitor.claimed_slot == m.claimed_slot)
                .values(cleared if recorded else {**cleared, "next_run_at": now})
            )
            if won.rowcount != 1 or recorded:
                continue
            run = DetectorRun(
                project_id=m.project_id, monitor_id=m.id, failure_mode=m.failure_mode, at=now,
                scheduled_for=m.claimed_slot, window_start=m.claimed_slot,
                window_end=m.claimed_slot, status="failed", fired=False, evidence={},
                error=INTERRUPTED,
            )  # fmt: skip
            session.add(run)
        log.warning("monitor %s: the run of %s was interrupted; running it again", m.id,
                    m.claimed_slot.isoformat())  # fmt: skip
        metrics.observe_monitor_run(
            project_id=m.project_id, monitor=m.name, failure_mode=m.failure_mode,
            status="failed", statistic=None, threshold=None, duration_s=0.0,
        )  # fmt: skip
        runs.append(run)
    return runs
