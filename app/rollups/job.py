"""The rollup job: rebuild the dirty buckets, oldest first, leader-only; and the backfill.

A periodic job of the scheduler (:mod:`app.scheduler.jobs`), beside the derive job that
marks most buckets dirty: each run takes the oldest marks (a backfill's history catches up
in time order), rebuilds each bucket from its raw rows (:mod:`app.rollups.build`) and
stops after :data:`TIME_BUDGET_S`; what is left waits for the next run. A bucket that fails
to rebuild is logged and left marked, and the run goes on with the others; a database
outage ends the run (the next one retries).

:func:`backfill` marks every bucket of a project's stored history dirty (``telltale
rollups backfill``): for data stored before the rollups existed.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime
from typing import Any

from prometheus_client import Gauge
from sqlalchemy import Engine, func, select
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from app.db import write_transaction
from app.models import RollupDirty, Trace
from app.rollups import dirty
from app.rollups.buckets import BUCKET_SECONDS, bucket_of
from app.rollups.build import rebuild
from app.settings import Settings

log = logging.getLogger("telltale.rollups")

ROLLUP_EVERY_SECONDS = 15.0
TIME_BUDGET_S = 0.8 * ROLLUP_EVERY_SECONDS
BATCH = 200
# The database being unreachable is no fault of a bucket: the run ends, the next retries
# (as the derive job's app/derive/failures.py OUTAGES).
OUTAGES = (OperationalError, InterfaceError, PoolTimeout)

ROLLUPS_PENDING = Gauge(
    "telltale_rollup_dirty_buckets", "Rollup buckets waiting to be rebuilt (after the last run)"
)


def rollup_job(engine: Engine, _sessionmaker: Any, _settings: Settings) -> None:
    """The periodic job: rebuild what is dirty for at most :data:`TIME_BUDGET_S`."""
    done = rebuild_dirty(engine, time_budget_s=TIME_BUDGET_S)
    if done:
        log.info("rebuilt %d rollup buckets", done)


def rebuild_dirty(engine: Engine, *, time_budget_s: float | None = None) -> int:
    """Rebuild dirty buckets until none is left or the budget is spent; return how many."""
    started, done = time.perf_counter(), 0
    failed: set[tuple[int, int]] = set()
    while True:
        with engine.connect() as conn:
            marks = [m for m in dirty.oldest(conn, limit=BATCH + len(failed))
                     if (m.project_id, m.bucket) not in failed][:BATCH]  # fmt: skip
        if not marks:
            break
        for m in marks:
            try:
                rebuild(engine, m)
                done += 1
            except OUTAGES:
                raise
            except Exception:
                failed.add((m.project_id, m.bucket))
                log.exception("rollups: bucket %s of project %s failed", m.bucket, m.project_id)
            if time_budget_s is not None and time.perf_counter() - started > time_budget_s:
                _report(engine)
                return done
    _report(engine)
    return done


def _report(engine: Engine) -> None:
    with engine.connect() as conn:
        ROLLUPS_PENDING.set(conn.scalar(select(func.count()).select_from(RollupDirty)) or 0)


def backfill(engine: Engine, *, project_id: int, since: datetime | None = None) -> int:
    """Mark every bucket of the project's traces (started at or after ``since``) dirty;
    return how many. The job then rebuilds them, oldest first."""
    with engine.connect() as conn:
        q = select(func.min(Trace.started_at), func.max(Trace.started_at)).where(
            Trace.project_id == project_id
        )
        if since is not None:
            q = q.where(Trace.started_at >= since)
        first, last = conn.execute(q).one()
    if first is None or last is None:
        return 0
    buckets = range(bucket_of(first), bucket_of(last) + 1, BUCKET_SECONDS)
    with write_transaction(engine) as conn:
        for i in range(0, len(buckets), 5000):
            dirty.mark(conn, project_id=project_id, buckets=buckets[i : i + 5000])
    return len(buckets)
