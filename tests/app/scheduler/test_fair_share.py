"""A tick's share per project: one project with a backlog of due monitors does not run it
all before another project's due monitor, whether that one was due when the tick began or
became due during it; a project alone still runs its whole backlog in the tick."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, select, update

from app.db import make_sessionmaker, write_session
from app.models import DetectorRun, Monitor
from app.scheduler.fair_share import PROJECT_SHARE
from app.scheduler.service import SchedulerService
from app.settings import Settings
from detectors.records import DetectorResult
from tests.app.engine_helpers import Clock, add_monitor, setup_project

BACKLOG = 3 * PROJECT_SHARE + 2


class OneSecond:
    """A clean detector that takes one second of the injected clock."""

    needs: tuple[str, ...] = ()

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def test(self, reference: Any, current: Any, *, now: float | None = None) -> DetectorResult:
        self.clock.advance(1)
        return DetectorResult("FM-2", 0.5, 1.0, 0.4, False, {})


def _tick(engine: Engine, settings: Settings, clock: Clock) -> list[int]:
    """One tick; the project of each run, in the order they ran."""

    def factory(mode: str, params: Mapping[str, Any]) -> OneSecond:
        return OneSecond(clock)

    svc = SchedulerService(settings, engine, make_sessionmaker(engine), clock=clock,
                           detector_factory=factory)  # fmt: skip
    svc.tick()
    with engine.connect() as conn:
        return list(conn.scalars(select(DetectorRun.project_id).order_by(DetectorRun.id)))


def _backlog(engine: Engine) -> tuple[int, int]:
    busy, other = setup_project(engine, "busy"), setup_project(engine, "other")
    for i in range(BACKLOG):
        add_monitor(engine, busy, "FM-2", name=f"m{i}", interval_seconds=3600)
    return busy, other


def test_another_projects_due_monitor_runs_before_a_backlog(
    engine: Engine, settings: Settings
) -> None:
    busy, other = _backlog(engine)
    add_monitor(engine, other, "FM-2", interval_seconds=3600)  # due after all of the backlog

    ran = _tick(engine, settings, Clock())

    assert ran.count(busy) == BACKLOG and ran.count(other) == 1
    assert ran.index(other) <= 1


def test_a_monitor_due_during_a_backlog_waits_at_most_one_round(
    engine: Engine, settings: Settings
) -> None:
    busy, other = _backlog(engine)
    late = add_monitor(engine, other, "FM-2", interval_seconds=3600)
    clock = Clock()
    with write_session(engine) as s:  # due three runs into the tick
        s.execute(
            update(Monitor)
            .where(Monitor.id == late)
            .values(next_run_at=clock.now + timedelta(seconds=3))
        )

    ran = _tick(engine, settings, clock)

    assert ran.count(busy) == BACKLOG and ran.count(other) == 1
    assert ran.index(other) <= PROJECT_SHARE
