"""Run nows share a cycle (its windows) for a minute, then let it go, scheduler or not."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from sqlalchemy import create_engine

from app.monitors.runner import MonitorRunner
from app.monitors.slots import DetectorSlots

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)


def _runner(reuse_s: float) -> MonitorRunner:
    engine = create_engine("sqlite://")  # the cycles never touch it
    return MonitorRunner(engine, slots=DetectorSlots(capacity=1), run_now_reuse_s=reuse_s)


def test_run_nows_share_the_cycle_of_the_same_now_and_not_of_another() -> None:
    runner = _runner(60.0)
    first = runner._run_now_cycle(None)
    assert runner._run_now_cycle(None) is first  # within the reuse window: the same windows
    replay = runner._run_now_cycle(NOW)
    assert replay is not first and replay.now == NOW
    assert runner._run_now_cycle(NOW) is replay


def test_the_run_now_cycle_is_let_go_after_its_reuse_window_without_a_tick() -> None:
    runner = _runner(0.2)
    runner._run_now_cycle(None)
    assert runner._run_now is not None
    deadline = time.monotonic() + 5.0
    while runner._run_now is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert runner._run_now is None  # no later call needed to free the windows
