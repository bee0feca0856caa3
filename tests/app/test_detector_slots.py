"""Detector slots: a timed-out detector keeps its slot until it really ends, so runaway
threads are bounded; a run with no free slot fails fast, and `run now` answers 429."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.main import create_app
from app.monitors.runner import run_monitor
from app.monitors.slots import DetectorsBusy, DetectorSlots
from app.settings import Settings
from detectors.deadline import checkpoint
from detectors.records import DetectorResult
from tests.app.engine_helpers import add_monitor, setup_project
from tests.conftest import auth


class Blocking:
    """Computes until released, like a detector stuck on a huge window."""

    needs: tuple[str, ...] = ()  # reads nothing: trace windows without embeddings

    def __init__(self, gate: threading.Event) -> None:
        self.gate = gate

    def test(self, reference: Any, current: Any, *, now: float | None = None) -> DetectorResult:
        self.gate.wait(30)
        return DetectorResult("FM-2", 0.5, 1.0, 0.4, False, {})


def test_timed_out_detectors_hold_their_slot_until_they_end(engine: Engine) -> None:
    pid = setup_project(engine)
    mid = add_monitor(engine, pid, "FM-2", time_limit_seconds=0.2)
    gate = threading.Event()
    slots = DetectorSlots(capacity=1)

    def run() -> Any:
        return run_monitor(engine, monitor_id=mid, detector_factory=lambda m, p: Blocking(gate),
                           slots=slots)  # fmt: skip

    first = run()
    assert first.status == "failed" and "time limit" in first.error
    second = run()  # the runaway detector still holds the only slot
    assert second.status == "failed" and second.error.startswith("DetectorsBusy")
    assert "1 by detectors still running past their time limit" in second.error
    gate.set()
    deadline = time.monotonic() + 10
    while not slots.try_acquire():
        assert time.monotonic() < deadline, "the slot never came back"
        time.sleep(0.01)
    slots.release()
    third = run()
    assert third.status == "ok", third.error


def test_run_now_answers_429_while_every_slot_is_taken(settings: Settings, make_key: Any) -> None:
    key = make_key("admin")
    app = create_app(
        settings.model_copy(update={"max_concurrent_detectors": 1}), start_background=False
    )
    with TestClient(app) as c:
        mid = c.post(
            "/api/v1/monitors", json={"name": "m", "failure_mode": "FM-2"}, headers=auth(key)
        ).json()["id"]
        slots = c.app.state.monitor_runner.slots  # the scheduler's, sized from the settings
        assert slots.capacity == 1 and slots.try_acquire()
        try:
            r = c.post(f"/api/v1/monitors/{mid}/run", json={}, headers=auth(key))
            assert r.status_code == 429 and r.headers["retry-after"]
            assert "detector slots" in r.json()["detail"]
        finally:
            slots.release()
        assert c.post(f"/api/v1/monitors/{mid}/run", json={}, headers=auth(key)).status_code == 200


def test_a_detector_that_cannot_be_built_fails_the_run_without_a_slot(engine: Engine) -> None:
    """Nothing to compute: the run is recorded failed at once with the reason, even with
    every slot taken (a scheduled run does not wait its time limit; run now is not a 429)."""
    pid = setup_project(engine)
    mid = add_monitor(engine, pid, "FM-2", time_limit_seconds=30)
    slots = DetectorSlots(capacity=1)

    def broken(mode: str, params: Any) -> Any:
        raise ValueError("alpha must be in (0, 1), got 2.0")

    assert slots.try_acquire()  # another monitor's detector holds the only slot
    try:
        for refuse in (False, True):
            began = time.monotonic()
            run = run_monitor(engine, monitor_id=mid, detector_factory=broken, slots=slots,
                              refuse_when_busy=refuse)  # fmt: skip
            assert time.monotonic() - began < 10, "waited for a slot it did not need"
            assert run.status == "failed" and not run.fired
            assert run.error == "ValueError: alpha must be in (0, 1), got 2.0"
    finally:
        slots.release()


class Resampling:
    """Resamples without end, checking its deadline once per chunk as every real
    resampling loop does (detectors.significance.SequentialPValue.add)."""

    needs: tuple[str, ...] = ()

    def test(self, reference: Any, current: Any, *, now: float | None = None) -> DetectorResult:
        rng = np.random.default_rng(0)
        while True:
            checkpoint()
            rng.permuted(np.arange(100_000))


def test_a_detector_past_its_limit_stops_and_gives_its_slot_back(engine: Engine) -> None:
    pid = setup_project(engine)
    mid = add_monitor(engine, pid, "FM-6", time_limit_seconds=0.2)
    slots = DetectorSlots(capacity=1)
    first = run_monitor(engine, monitor_id=mid, detector_factory=lambda m, p: Resampling(),
                        slots=slots)  # fmt: skip
    assert first.status == "failed" and "time limit" in first.error
    # It stopped at its next checkpoint: the slot is back (it used to stay taken for good).
    deadline = time.monotonic() + 10
    while not slots.try_acquire():
        assert time.monotonic() < deadline, "the slot never came back"
        time.sleep(0.01)
    slots.release()


def test_one_project_at_its_share_leaves_slots_to_the_others(engine: Engine) -> None:
    a, b = setup_project(engine, "a"), setup_project(engine, "b")
    a_slow, a_other = (add_monitor(engine, a, "FM-2", name=n) for n in ("slow", "other"))
    b_mon = add_monitor(engine, b, "FM-2", time_limit_seconds=30)
    gate = threading.Event()
    slots = DetectorSlots(capacity=2)  # the default: one per project
    holder = threading.Thread(target=run_monitor, args=(engine,), kwargs=dict(
        monitor_id=a_slow, detector_factory=lambda m, p: Blocking(gate), slots=slots))  # fmt: skip
    holder.start()
    try:
        deadline = time.monotonic() + 10
        while slots.try_acquire(project=a):  # free for A until its run holds A's one slot
            slots.release(project=a)
            assert time.monotonic() < deadline, "A's run never took its slot"
            time.sleep(0.01)
        with pytest.raises(DetectorsBusy, match="this project's 1 of the 2 detector slots"):
            run_monitor(engine, monitor_id=a_other, slots=slots, refuse_when_busy=True,
                        detector_factory=lambda m, p: Blocking(gate))  # fmt: skip
        other = run_monitor(engine, monitor_id=b_mon, slots=slots, refuse_when_busy=True,
                            detector_factory=lambda m, p: _Quick())  # fmt: skip
        assert other.status == "ok", other.error
    finally:
        gate.set()
        holder.join(10)


class _Quick:
    needs: tuple[str, ...] = ()

    def test(self, reference: Any, current: Any, *, now: float | None = None) -> DetectorResult:
        return DetectorResult("FM-2", 0.1, 1.0, 0.9, False, {})
