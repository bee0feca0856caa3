"""The detect stage of a run: the plan's detector on its windows, under the monitor's time limit.

The detector computes in a thread of its own, holding a detector slot
(:mod:`app.monitors.slots`) until it really returns, past its limit too. What comes out is
an :class:`Outcome`: the detector's result, or why there is none, with what the windows
held; the record stage (:mod:`app.monitors.record`) persists it whatever it is.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.monitors.load import RunWindows
from app.monitors.plan import RunPlan
from app.monitors.slots import Slot
from detectors.deadline import DetectorCancelled, deadline
from detectors.result import DetectorResult

log = logging.getLogger("telltale.monitors")


class DetectorTimeout(Exception):
    @classmethod
    def after(cls, limit_s: float) -> DetectorTimeout:
        return cls(f"detector exceeded its time limit of {limit_s:g} s")


@dataclass(frozen=True)
class Outcome:
    """What a run found: ``result`` (None: the run failed, ``error`` says why), the
    windows' sizes and sample description, and how long the run took."""

    result: DetectorResult | None
    error: str | None = None
    sample: dict[str, Any] = field(default_factory=dict)
    n_reference: int = 0
    n_current: int = 0
    duration_ms: float = 0.0
    readiness: dict[str, Any] | None = None  # the window's counts (RunWindows.readiness)

    @classmethod
    def failed(cls, plan: RunPlan, error: str, windows: RunWindows | None = None) -> Outcome:
        log.warning("monitor %s (%s) failed: %s", plan.monitor.id, plan.monitor.name, error)
        if windows is None:
            return cls(None, error)
        return cls(None, error, windows.sample, *windows.sizes, readiness=windows.readiness)


def failure(exc: BaseException) -> str:
    """An exception as a run's ``error``."""
    return f"{type(exc).__name__}: {exc}"[:2000]


def detect(plan: RunPlan, windows: RunWindows, *, slot: Slot) -> Outcome:
    """The detector's result on ``windows`` as of the plan's ``as_of``; ``slot`` goes with
    the detector's thread."""
    detector = plan.detector
    assert detector is not None, "a plan without a detector gives no windows to detect on"
    epoch = plan.as_of.timestamp()
    try:
        result = call_with_time_limit(
            lambda: detector.test(windows.reference, windows.current, now=epoch),
            float(plan.monitor.time_limit_seconds),
            slot=slot,
        )
    except Exception as exc:
        return Outcome.failed(plan, failure(exc), windows)
    return Outcome(result, None, windows.sample, *windows.sizes, readiness=windows.readiness)


def call_with_time_limit(
    fn: Callable[[], DetectorResult], limit_s: float, *, slot: Slot | None = None
) -> DetectorResult:
    """Run ``fn`` in a daemon thread; raise DetectorTimeout after ``limit_s`` seconds.

    Python cannot kill a thread: the thread runs under a deadline of ``limit_s``, at which
    the detector's resampling loops stop (:mod:`detectors.deadline`). It keeps ``slot``
    until it really ends (see :mod:`app.monitors.slots`), which bounds how many such
    threads can exist.
    """
    box: dict[str, Any] = {}
    lock = threading.Lock()
    state = {"done": False, "overdue": False}

    def target() -> None:
        try:
            with deadline(limit_s):  # the detector's loops stop there (detectors.deadline)
                box["result"] = fn()
        except BaseException as exc:  # handed back to the caller below
            box["error"] = exc
        finally:
            with lock:
                state["done"] = True
                overdue = state["overdue"]
            if slot is not None:
                slot.release(was_overdue=overdue)

    thread = threading.Thread(target=target, name="detector", daemon=True)
    if slot is not None:
        slot.hand_over()
    thread.start()
    thread.join(limit_s)
    with lock:
        if not state["done"]:
            state["overdue"] = True
            if slot is not None:
                slot.slots.mark_overdue()
            raise DetectorTimeout.after(limit_s)
    if isinstance(box.get("error"), DetectorCancelled):  # it stopped at the deadline itself
        raise DetectorTimeout.after(limit_s)
    if "error" in box:
        raise box["error"]
    return box["result"]  # type: ignore[no-any-return]
