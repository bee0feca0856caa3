"""Periodic jobs other features add to the scheduler (queue fillers, lease reapers...).

    from app.scheduler.jobs import register_periodic

    def reap_expired_leases(engine, sessionmaker, settings) -> None: ...

    register_periodic("labeling.reap", reap_expired_leases, interval_seconds=30)

Register at import time of a module the app imports (a routes module will do). Jobs start
with the scheduler (in the API process, or ``telltale scheduler``); a failing job is
logged and runs again at its next interval. ``exclusive=True`` (the default) runs a job
once per interval across all scheduler processes (a DB lease); ``exclusive=False`` runs
it in every scheduler process (for work that is already safe to run concurrently).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from app.settings import Settings

PeriodicFunc = Callable[[Engine, Any, Settings], Any]


@dataclass(frozen=True)
class PeriodicJob:
    name: str
    func: PeriodicFunc
    interval_seconds: float
    exclusive: bool = True


_JOBS: dict[str, PeriodicJob] = {}


def register_periodic(
    name: str, func: PeriodicFunc, interval_seconds: float, *, exclusive: bool = True
) -> PeriodicJob:
    """Add (or replace) the job ``name``: ``func(engine, sessionmaker, settings)``."""
    if interval_seconds <= 0:
        raise ValueError(f"interval_seconds must be > 0, got {interval_seconds!r}")
    job = PeriodicJob(name, func, float(interval_seconds), exclusive)
    _JOBS[name] = job
    return job


def unregister_periodic(name: str) -> None:
    _JOBS.pop(name, None)


def registered_jobs() -> list[PeriodicJob]:
    return list(_JOBS.values())
