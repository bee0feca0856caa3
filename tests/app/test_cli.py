"""``telltale``'s logging: a library's per-tick INFO lines stay out of the service's log."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest
from apscheduler.schedulers.background import BackgroundScheduler

from app.cli import quiet_library_logs


@pytest.fixture
def restore_levels() -> Iterator[None]:
    names = ("apscheduler", "alembic", "alembic.runtime.plugins")
    levels = {n: logging.getLogger(n).level for n in names}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def test_a_scheduler_tick_logs_nothing_at_info(caplog, restore_levels):
    quiet_library_logs("serve")
    caplog.set_level(logging.INFO)
    ran = threading.Event()
    sched = BackgroundScheduler(timezone="UTC")
    # An interval job: a one-shot job is removed after its run, racing the shutdown below.
    sched.add_job(ran.set, "interval", seconds=0.05, id="tick")
    sched.start()
    try:
        assert ran.wait(10)
    finally:
        sched.shutdown(wait=True)
    noise = [r.getMessage() for r in caplog.records if r.name.startswith("apscheduler")]
    assert not [m for m in noise if "Running job" in m or "executed successfully" in m], noise
    warning = logging.getLogger("apscheduler.executors.default")
    assert warning.isEnabledFor(logging.WARNING)  # a missed run still says so
