"""A scheduled run whose process stopped: recorded as failed once its claim expires, and
the monitor runs again at once instead of a whole interval later; a live claim is left
alone, and a run recorded before its release was lost is not recorded twice."""

from __future__ import annotations

from sqlalchemy import Engine, select

from app.db import make_sessionmaker, write_session
from app.models import DetectorRun, Monitor
from app.scheduler import leader
from app.scheduler.interrupted import INTERRUPTED
from app.scheduler.service import SchedulerService
from app.settings import Settings
from tests.app.engine_helpers import Clock, add_monitor, scripted_factory, setup_project

HOUR = 3600


def _runs(engine: Engine) -> list[DetectorRun]:
    with write_session(engine) as s:
        return list(s.scalars(select(DetectorRun).order_by(DetectorRun.id)))


def _claim_and_die(engine: Engine, clock: Clock) -> leader.DueMonitor:
    """What a scheduler killed during the run leaves: the slot claimed, nothing recorded."""
    [due] = leader.due_monitors(engine, now=clock.now)
    won = leader.claim_monitor(
        engine, monitor_id=due.monitor_id, slot=due.slot, interval_s=due.interval_s,
        lease_s=due.lease_s, now=clock.now,
    )  # fmt: skip
    assert won is not None
    return due._replace(slot=won)


def _service(engine: Engine, settings: Settings, clock: Clock) -> SchedulerService:
    return SchedulerService(settings, engine, make_sessionmaker(engine), clock=clock,
                            detector_factory=scripted_factory({"FM-2": ["clean"] * 5}))  # fmt: skip


def test_a_killed_run_is_recorded_and_run_again_once_its_claim_expires(
    engine: Engine, settings: Settings
) -> None:
    pid = setup_project(engine)
    add_monitor(engine, pid, "FM-2", interval_seconds=HOUR, time_limit_seconds=10)
    clock = Clock()
    killed = _claim_and_die(engine, clock)
    assert killed.lease_s == 2 * 10 + leader.CLAIM_MARGIN_S
    svc = _service(engine, settings, clock)

    clock.advance(killed.lease_s - 1)  # it may still be running: left alone
    assert svc.tick() == [] and _runs(engine) == []

    clock.advance(2)
    failed, again = svc.tick()

    assert (failed.status, failed.error) == ("failed", INTERRUPTED)
    assert failed.scheduled_for == killed.slot and not failed.fired
    assert again.status == "ok" and again.scheduled_for == clock.now  # not an hour later
    with engine.connect() as conn:
        claim = conn.execute(select(Monitor.claimed_slot, Monitor.claim_expires_at)).one()
    assert tuple(claim) == (None, None)  # released after the new run
    assert svc.tick() == []  # once


def test_a_run_recorded_before_its_release_was_lost_is_not_recorded_twice(
    engine: Engine, settings: Settings
) -> None:
    pid = setup_project(engine)
    mid = add_monitor(engine, pid, "FM-2", interval_seconds=HOUR)
    clock = Clock()
    svc = _service(engine, settings, clock)
    [run] = svc.tick()
    with write_session(engine) as s:  # the process died between the record and the release
        s.get_one(Monitor, mid).claimed_slot = run.scheduled_for
        s.get_one(Monitor, mid).claim_expires_at = clock.now

    clock.advance(1)
    assert svc.tick() == []

    assert [r.id for r in _runs(engine)] == [run.id]
    with engine.connect() as conn:
        claimed, next_run = conn.execute(select(Monitor.claimed_slot, Monitor.next_run_at)).one()
    assert claimed is None and next_run > clock.now  # the schedule it had, not at once
