"""Periodic jobs of the labeling feature: fill due queues, reap expired leases.

The scheduler runs them (listed in :func:`app.scheduler.jobs.periodic_jobs`); each job logs
failures with context and carries on, and exports a last-run metric.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Any

from prometheus_client import Gauge
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.labeling.claims import reap_expired
from app.labeling.fill import fill_queue
from app.labeling.writeback import sync_label_scores
from app.models.base import utcnow
from app.models.labeling import LabelQueue

log = logging.getLogger("telltale.labeling")

FILL_EVERY_SECONDS = 60
REAP_EVERY_SECONDS = 30
JOB_LAST_SUCCESS = Gauge(
    "telltale_labeling_job_last_success_timestamp_seconds",
    "Unix time of the last successful run of a labeling job",
    ["job"],
)
ITEMS_ADDED = Gauge(
    "telltale_labeling_last_fill_items_added", "Items added by the last fill run, all queues"
)


def fill_due_queues(engine: Engine, sessionmaker: Any = None, settings: Any = None) -> int:
    """Fill every queue whose fill interval has elapsed; one queue failing skips only it."""
    now = utcnow()
    with Session(engine) as session:
        due = [
            (q.id, q.name, q.fill_interval_seconds)
            for q in session.scalars(select(LabelQueue))
            if q.last_filled_at is None
            or q.last_filled_at + timedelta(seconds=q.fill_interval_seconds) <= now
        ]
    added = 0
    for queue_id, name, _interval in due:
        try:
            added += fill_queue(engine, queue_id=queue_id, now=now).added
        except Exception:
            log.exception("labeling fill of queue %s (id %s) failed", name, queue_id)
    ITEMS_ADDED.set(added)
    JOB_LAST_SUCCESS.labels(job="labeling_fill").set(time.time())
    return added


def reap_leases(engine: Engine, sessionmaker: Any = None, settings: Any = None) -> int:
    """Expired leases back to pending; label scores whose write-back failed, retried."""
    reaped = reap_expired(engine)
    try:
        sync_label_scores(engine)
    except Exception:
        log.exception("labeling: retrying label score write-backs failed")
    JOB_LAST_SUCCESS.labels(job="labeling_reaper").set(time.time())
    return reaped
