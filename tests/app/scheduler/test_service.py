"""The scheduler: failures isolated, once per interval across processes, periodic jobs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from app.db import make_engine, make_sessionmaker, write_session
from app.models import DetectorRun
from app.monitors.schemas import MIN_INTERVAL_SECONDS
from app.scheduler import jobs, leader
from app.scheduler.service import SchedulerService
from app.settings import Settings
from tests.app.engine_helpers import (
    Clock,
    add_monitor,
    scripted_factory,
    setup_project,
    store_interval,
)
from tests.conftest import fresh_database

ROOT = Path(__file__).resolve().parents[3]


def _runs(engine: Engine) -> list[DetectorRun]:
    with write_session(engine) as s:
        return list(s.scalars(select(DetectorRun).order_by(DetectorRun.id)))


def test_raising_and_slow_detectors_do_not_stop_others(engine: Engine, settings: Settings) -> None:
    pid = setup_project(engine)
    add_monitor(engine, pid, "FM-1", interval_seconds=60)
    add_monitor(engine, pid, "FM-2", interval_seconds=60, time_limit_seconds=0.2)
    add_monitor(engine, pid, "FM-3", interval_seconds=60)
    clock = Clock()
    factory = scripted_factory(
        {"FM-1": ["raise", "clean"], "FM-2": ["slow"], "FM-3": ["fire", "clean"]}
    )
    svc = SchedulerService(settings, engine, make_sessionmaker(engine), clock=clock,
                           detector_factory=factory)  # fmt: skip
    runs = svc.tick()
    by_mode = {r.failure_mode: r for r in runs}
    assert by_mode["FM-1"].status == "failed" and "scripted detector failure" in (
        by_mode["FM-1"].error or ""
    )
    assert by_mode["FM-2"].status == "failed" and "time limit" in (by_mode["FM-2"].error or "")
    assert by_mode["FM-3"].status == "ok" and by_mode["FM-3"].fired
    assert svc.tick() == []  # nothing is due again inside the interval
    clock.advance(61)
    factory_runs = svc.tick()
    assert {r.failure_mode for r in factory_runs} == {"FM-1", "FM-3"} or len(factory_runs) == 3


def test_lease_is_compare_and_set(engine: Engine) -> None:
    pid = setup_project(engine)
    mid = add_monitor(engine, pid, "FM-1", interval_seconds=60)
    now = Clock().now
    [due] = leader.due_monitors(engine, now=now)
    assert (due.monitor_id, due.project_id, due.interval_s) == (mid, pid, 60)
    claim = {"slot": due.slot, "interval_s": due.interval_s, "lease_s": due.lease_s, "now": now}
    assert leader.claim_monitor(engine, monitor_id=mid, **claim)
    assert leader.claim_monitor(engine, monitor_id=mid, **claim) is None
    assert leader.due_monitors(engine, now=now) == []
    # On time: the next slot is one interval on; late: missed slots coalesce into this run.
    assert leader.next_slot(now, 60, now + timedelta(seconds=1)) == now + timedelta(seconds=60)
    late = now + timedelta(seconds=250)
    assert leader.next_slot(now, 60, late) == late + timedelta(seconds=60)


def test_periodic_jobs_run_once_per_interval(engine: Engine, settings: Settings) -> None:
    calls: list[str] = []

    def job(eng: Engine, sm: Any, st: Settings) -> None:
        assert eng is engine and st is settings
        calls.append("x")

    periodic = jobs.PeriodicJob("test.job", job, interval_seconds=30)
    clock = Clock()
    a = SchedulerService(settings, engine, make_sessionmaker(engine), clock=clock)
    b = SchedulerService(settings, engine, make_sessionmaker(engine), clock=clock)
    a.run_periodic(periodic)
    b.run_periodic(periodic)
    assert calls == ["x"]
    clock.advance(30)
    b.run_periodic(periodic)
    a.run_periodic(periodic)
    assert calls == ["x", "x"]
    with pytest.raises(ValueError, match="interval_seconds"):
        jobs.PeriodicJob("bad", job, interval_seconds=0)


def test_service_starts_and_stops_cleanly(engine: Engine, settings: Settings) -> None:
    pid = setup_project(engine)
    add_monitor(engine, pid, "FM-1", interval_seconds=3600)
    svc = SchedulerService(settings, engine, make_sessionmaker(engine), tick_seconds=0.1)
    svc.start()
    try:
        deadline = time.monotonic() + 20
        while not _runs(engine):
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        svc.stop()
    [run] = _runs(engine)
    assert run.status == "insufficient_data" and not run.fired  # empty database


@pytest.mark.slow
def test_two_scheduler_processes_run_each_monitor_once_per_interval(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = fresh_database("postgresql", tmp_path, request)
    engine = make_engine(url)
    try:
        pid = setup_project(engine)
        interval = 2
        monitors = [add_monitor(engine, pid, mode) for mode in ("FM-1", "FM-2", "FM-6")]
        for monitor in monitors:  # below the API's floor: the schedulers are told to keep it
            store_interval(engine, monitor, interval)
        env = {**os.environ, "TELLTALE_DATABASE_URL": url}
        cmd = [sys.executable, "-m", "app", "scheduler", "--tick", "0.1", "--no-outbox",
               "--min-interval", "1"]  # fmt: skip
        procs = [
            subprocess.Popen(
                cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )  # fmt: skip
            for _ in range(2)
        ]
        try:
            # Until every monitor has run three times (two intervals after both processes
            # are up), polled rather than slept for: process start-up time varies.
            deadline = time.monotonic() + 60
            while (
                min((done := Counter(r.monitor_id for r in _runs(engine)))[m] for m in monitors) < 3
            ):
                assert time.monotonic() < deadline, f"runs per monitor: {done}"
                time.sleep(0.1)
        finally:
            for p in procs:
                p.send_signal(signal.SIGTERM)
            codes = [p.wait(timeout=30) for p in procs]
        assert codes == [0, 0]
        runs = _runs(engine)
        per_monitor: dict[int, list[DetectorRun]] = {}
        for r in runs:
            per_monitor.setdefault(r.monitor_id, []).append(r)
        span = max(r.at for r in runs) - min(r.at for r in runs)
        for monitor_runs in per_monitor.values():
            slots = [r.scheduled_for for r in monitor_runs]
            assert len(slots) == len(set(slots))
            ats = sorted(r.at for r in monitor_runs)
            gaps = [(b - a).total_seconds() for a, b in zip(ats, ats[1:], strict=False)]
            assert all(g >= interval - 0.3 for g in gaps), gaps  # never twice in one interval
            assert len(monitor_runs) <= span.total_seconds() / interval + 2
            assert len(monitor_runs) >= 3
        with engine.connect() as conn:
            assert conn.scalar(select(func.count()).select_from(DetectorRun)) == len(runs)
    finally:
        engine.dispose()


def test_an_interval_stored_below_the_floor_runs_at_the_floor(
    engine: Engine, settings: Settings
) -> None:
    pid = setup_project(engine)
    mid = add_monitor(engine, pid, "FM-2")
    store_interval(engine, mid, 1)  # allowed before the floor
    clock = Clock()
    svc = SchedulerService(settings, engine, make_sessionmaker(engine), clock=clock,
                           detector_factory=scripted_factory({"FM-2": ["clean"] * 3}))  # fmt: skip
    assert len(svc.tick()) == 1
    clock.advance(2)
    assert svc.tick() == []
    clock.advance(MIN_INTERVAL_SECONDS)
    assert len(svc.tick()) == 1
