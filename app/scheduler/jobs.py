"""The periodic jobs the scheduler runs beside the monitors: queue fillers, lease reapers,
data retention, alert reminders, derived fields, rollups, online evaluators.

A job is ``func(engine, sessionmaker, settings)``, run every ``interval_seconds``; a failing
job is logged and runs again at its next interval. ``exclusive=True`` (the default) runs a
job once per interval across all scheduler processes (a DB lease); ``exclusive=False`` runs
it in every scheduler process (for work that is already safe to run concurrently).

:func:`periodic_jobs` lists every job, once: the app's lifespan and ``telltale scheduler``
both hand it to :class:`~app.scheduler.service.SchedulerService`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from app.alerts import repeats
from app.derive import job as derive
from app.evaluators import runner as evaluators
from app.labeling import jobs as labeling
from app.retention import purge as retention
from app.rollups import job as rollups
from app.settings import Settings

PeriodicFunc = Callable[[Engine, Any, Settings], Any]


@dataclass(frozen=True)
class PeriodicJob:
    name: str
    func: PeriodicFunc
    interval_seconds: float
    exclusive: bool = True

    def __post_init__(self) -> None:
        if self.interval_seconds <= 0:
            raise ValueError(f"interval_seconds must be > 0, got {self.interval_seconds!r}")


def periodic_jobs() -> list[PeriodicJob]:
    """Every periodic job of every feature."""
    return [
        PeriodicJob("labeling_fill", labeling.fill_due_queues, labeling.FILL_EVERY_SECONDS),
        PeriodicJob("labeling_reaper", labeling.reap_leases, labeling.REAP_EVERY_SECONDS),
        PeriodicJob("data_retention", retention.purge_expired_data, retention.PURGE_EVERY_SECONDS),
        PeriodicJob("alert_repeats", repeats.repeat_job, repeats.REPEAT_EVERY_SECONDS),
        PeriodicJob("derive_signals", derive.derive_job, derive.DERIVE_EVERY_SECONDS),
        PeriodicJob("rollups", rollups.rollup_job, rollups.ROLLUP_EVERY_SECONDS),
        # Leases keep concurrent runs on different traces: every scheduler process helps.
        PeriodicJob("evaluators", evaluators.evaluate_job, evaluators.EVALUATE_EVERY_SECONDS,
                    exclusive=False),
    ]
