"""Run one monitor: a frozen plan goes through load, detect, decide and record, the one way every run goes.

:func:`run_monitor` is the pipeline: :func:`app.monitors.plan.plan_run` decides what the
run compares, :func:`app.monitors.load.load` reads the windows through the cycle's
cache, :func:`app.monitors.detect.detect` calls the detector under its time limit,
:func:`app.monitors.decide.decide` works out the verdict and the next baseline without
touching the database, and :func:`app.monitors.record.record` writes it all; no stage
reaches back into the one before it. "Now" is a parameter so replays and tests can run at any time.

:class:`MonitorRunner` holds what the runs of one process share, and is how the service
runs monitors: the scheduler's ticks and ``run now`` (the API route, the settings page, the
demo) go through the same one, so both pay for a window the same way.

* **Detector slots** (:mod:`app.monitors.slots`): detector threads are the process's,
  whichever caller started them; the capacity comes from
  ``Settings.max_concurrent_detectors``.
* **Cycles.** A scheduler tick opens a cycle (:class:`WindowCache`): its monitors are
  evaluated as of the tick's start and share every window with equal bounds. ``run now``
  joins the latest run-now cycle when it asks for the same ``now`` (a replay's clock, the
  demo's), or, asking for none, when that cycle began at most :data:`RUN_NOW_REUSE_S`
  ago: the windows then end at that cycle's start, as a tick's later monitors' do. So the
  seven defaults run now one after another load their windows once, as a scheduled cycle
  does; a run now seconds after new data arrived may not see them yet (the next one,
  after the reuse window, does). A cycle's loads are serialised by its lock, so a second
  request waits for the first's load and then shares it.
* **The step cache** (:mod:`app.monitors.windows.step_cache`), lent to every cycle: the
  steps of traces unchanged since an earlier cycle are not read again.
"""

from __future__ import annotations

import threading
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db import as_utc
from app.models import DetectorRun
from app.models.base import utcnow
from app.monitors.decide import decide
from app.monitors.detect import Outcome, detect, failure
from app.monitors.detection import build_detector
from app.monitors.load import load
from app.monitors.plan import DetectorFactory, RunPlan, plan_run
from app.monitors.record import record
from app.monitors.slots import DetectorsBusy, DetectorSlots
from app.monitors.windows.cache import WindowCache
from app.monitors.windows.step_cache import StepCache

__all__ = ["DetectorFactory", "DetectorsBusy", "MonitorRunner", "run_monitor"]

# How long a run now without a ``now`` joins the run-now cycle before it (seconds).
RUN_NOW_REUSE_S = 60.0


def run_monitor(
    engine: Engine,
    *,
    monitor_id: int,
    now: datetime | None = None,
    scheduled_for: datetime | None = None,
    detector_factory: DetectorFactory = build_detector,
    public_url: str = "",
    slots: DetectorSlots | None = None,
    refuse_when_busy: bool = False,
    cache: WindowCache | None = None,
    read_engine: Engine | None = None,
) -> DetectorRun | None:
    """Run the monitor as of ``now``; return the persisted run (None: monitor is gone).

    With every detector slot taken the run waits for one up to the monitor's time limit,
    then is persisted as ``failed`` (the scheduler tries again next interval); with
    ``refuse_when_busy`` it does not wait: :class:`DetectorsBusy` is raised and nothing is
    persisted (``run now`` answers 429). A run with nothing to compute (no reference
    version, or a detector its parameters cannot build) takes no slot and is recorded at
    once. ``slots``: the process's (a :class:`MonitorRunner`'s); a call without them is
    bounded by none but its own.

    ``cache``: the cycle the run belongs to; the windows then end at the cycle's ``now``,
    so the monitors of one cycle share them. Without one the run is a cycle of its own.

    ``read_engine``: where the windows are read (``TELLTALE_READ_DATABASE_URL``, a
    streaming replica): the traces, vectors, versions and where the history begins. The
    monitor, its state (the frozen baseline, the open alert) and everything the run writes
    go through ``engine``, the primary, so a replica's lag can only delay which data a run
    sees, never which baseline or alert it acts on.
    """
    now = as_utc(now) if now is not None else utcnow()
    cycle = cache if cache is not None else WindowCache(now=now)
    slots = slots if slots is not None else DetectorSlots(capacity=1)
    started = time.perf_counter()
    with Session(engine) as session, _reader(session, read_engine) as data:
        plan = plan_run(
            session, data, monitor_id=monitor_id, now=now, cycle=cycle,
            scheduled_for=scheduled_for, detector_factory=detector_factory,
        )  # fmt: skip
        if plan is None:
            return None
        outcome = _outcome(
            plan, data=data, cycle=cycle, slots=slots, refuse_when_busy=refuse_when_busy,
            write_engine=engine,
        )  # fmt: skip
    outcome = replace(outcome, duration_ms=(time.perf_counter() - started) * 1000.0)
    judged = decide(plan, outcome)
    return record(engine, plan, outcome, judged, public_url=public_url)


def _outcome(
    plan: RunPlan, *, data: Session, cycle: WindowCache, slots: DetectorSlots,
    refuse_when_busy: bool, write_engine: Engine,
) -> Outcome:  # fmt: skip
    """Load and detect under a detector slot (the windows count against it too)."""
    if plan.no_reference is not None:  # nothing to detect on: decide says why
        return Outcome(None)
    if plan.build_error is not None:  # no detector to run: no slot to wait for
        return Outcome(None, plan.build_error)
    project = plan.monitor.project_id
    wait_s = 0.0 if refuse_when_busy else float(plan.monitor.time_limit_seconds)
    slot = slots.take(wait_s, project=project)
    if slot is None:
        if refuse_when_busy:
            raise DetectorsBusy(slots.busy_message(project=project))
        return Outcome(None, f"DetectorsBusy: {slots.busy_message(project=project)}")
    with slot:
        try:
            with cycle.lock:
                windows = load(plan, data=data, cycle=cycle, write_engine=write_engine)
        except Exception as exc:
            return Outcome.failed(plan, failure(exc))
        return detect(plan, windows, slot=slot)


def _reader(session: Session, read_engine: Engine | None) -> AbstractContextManager[Session]:
    """A session on the read engine, or the run's own session when there is none."""
    return Session(read_engine) if read_engine is not None else nullcontext(session)


class MonitorRunner:
    """The process's way to run monitors (see the module's notes)."""

    def __init__(
        self,
        engine: Engine,
        *,
        slots: DetectorSlots,
        read_engine: Engine | None = None,
        detector_factory: DetectorFactory = build_detector,
        public_url: str = "",
        clock: Any = utcnow,
        run_now_reuse_s: float = RUN_NOW_REUSE_S,
    ) -> None:
        self.engine, self.read_engine, self.slots = engine, read_engine, slots
        self.detector_factory, self.public_url, self.clock = detector_factory, public_url, clock
        self.run_now_reuse_s = run_now_reuse_s
        self.step_cache = StepCache()
        self._lock = threading.Lock()
        # The latest run-now cycle: the ``now`` it was asked for (None: the wall clock's)
        # and when it began (monotonic seconds).
        self._run_now: tuple[WindowCache, datetime | None, float] | None = None
        # Lets go of the run-now cycle once its reuse window has passed, so its windows do
        # not stay in memory until the next tick or run now (none may come: no scheduler).
        self._expiry: threading.Timer | None = None

    def cycle(self, now: datetime) -> WindowCache:
        """A scheduler tick's cycle, evaluated as of ``now``."""
        self._expire_run_now()
        return WindowCache(now=now, steps=self.step_cache)

    def end_cycle(self) -> None:
        """After a tick: forget the steps of traces no cycle has read since the last end."""
        self.step_cache.end_cycle()

    def run(
        self, monitor_id: int, *, now: datetime, cycle: WindowCache,
        scheduled_for: datetime | None = None, refuse_when_busy: bool = False,
    ) -> DetectorRun | None:  # fmt: skip
        return run_monitor(
            self.engine, monitor_id=monitor_id, now=now, scheduled_for=scheduled_for,
            detector_factory=self.detector_factory, public_url=self.public_url,
            slots=self.slots, refuse_when_busy=refuse_when_busy, cache=cycle,
            read_engine=self.read_engine,
        )  # fmt: skip

    def run_now(self, monitor_id: int, *, now: datetime | None = None) -> DetectorRun | None:
        """``run now``: at once or :class:`DetectorsBusy`, in the latest run-now cycle that
        fits ``now`` (see the module's notes)."""
        asked = as_utc(now) if now is not None else None
        cycle = self._run_now_cycle(asked)
        stamp = asked if asked is not None else self.clock()
        return self.run(monitor_id, now=stamp, cycle=cycle, refuse_when_busy=True)

    def _run_now_cycle(self, asked: datetime | None) -> WindowCache:
        self._expire_run_now()
        with self._lock:
            if self._run_now is not None and self._run_now[1] == asked:
                return self._run_now[0]
            if self._run_now is not None:
                self.end_cycle()
            cycle = WindowCache(now=asked or self.clock(), steps=self.step_cache)
            self._run_now = (cycle, asked, time.monotonic())
            if self._expiry is not None:
                self._expiry.cancel()
            self._expiry = threading.Timer(self.run_now_reuse_s * 1.05, self._expire_run_now)
            self._expiry.daemon = True
            self._expiry.start()
            return cycle

    def _expire_run_now(self) -> None:
        """Let go of a run-now cycle past its reuse window (its windows' memory with it)."""
        with self._lock:
            if self._run_now is not None:
                if time.monotonic() - self._run_now[2] > self.run_now_reuse_s:
                    self._run_now = None
                    self.end_cycle()
