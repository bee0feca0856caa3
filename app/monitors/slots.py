"""How many detector computations may run in this process at once, and how many per project.

A slot is taken before a run loads its windows and given back when its detector thread
really ends. A detector past its time limit stops at its next checkpoint
(:mod:`detectors.deadline`: every resampling loop checks its deadline once per chunk), so
it gives its slot back within one chunk of its limit; a detector that computes without
checkpoints (bounded by its parameters' upper bounds) keeps the slot until it returns, and
is counted as overdue meanwhile. At most ``capacity`` computations ever share the CPU. A
scheduled run waits for a slot up to its own time limit, then fails; ``run now`` is
refused at once.

One project may hold at most ``per_project`` slots: a quarter of them (at least one) are
kept for the other projects, so a project whose monitors compute for their whole time
limit (or are run now again and again) cannot leave every other project's runs refused.
With the default two slots, a project runs one detector at a time.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Hashable
from types import TracebackType


class DetectorsBusy(Exception):
    """No slot for this run; the message says why."""


def per_project_share(capacity: int) -> int:
    """Slots one project may hold: all but a quarter (at least one) of ``capacity``.

    >>> [per_project_share(c) for c in (1, 2, 4, 8)]
    [1, 1, 3, 6]
    """
    return capacity if capacity == 1 else capacity - max(1, capacity // 4)


class DetectorSlots:
    """A counting semaphore with a per-project cap; its capacity can be set at start-up.

    >>> slots = DetectorSlots(capacity=2)
    >>> slots.try_acquire(project=1), slots.try_acquire(project=1), slots.try_acquire(project=2)
    (True, False, True)
    >>> slots.release(project=1); slots.try_acquire(project=1)
    True
    """

    def __init__(self, capacity: int) -> None:
        self._lock = threading.Condition()
        self._in_use = 0
        self._held: Counter[Hashable] = Counter()
        self._overdue = 0
        self.capacity = capacity

    @property
    def capacity(self) -> int:
        return self._capacity

    @capacity.setter
    def capacity(self, value: int) -> None:
        if value < 1:
            raise ValueError(f"capacity must be >= 1, not {value}")
        self._capacity = value
        self.per_project = per_project_share(value)

    def take(self, timeout_s: float = 0.0, *, project: Hashable = None) -> Slot | None:
        """A slot of ``project`` (a context manager that gives it back), or None after
        ``timeout_s``."""
        return Slot(self, project) if self.try_acquire(timeout_s, project=project) else None

    def try_acquire(self, timeout_s: float = 0.0, *, project: Hashable = None) -> bool:
        """Take a slot for ``project``, waiting up to ``timeout_s`` for one it may hold."""

        def free() -> bool:
            return self._in_use < self._capacity and self._held[project] < self.per_project

        with self._lock:
            if not self._lock.wait_for(free, timeout_s):
                return False
            self._in_use += 1
            self._held[project] += 1
            return True

    def release(self, *, project: Hashable = None, was_overdue: bool = False) -> None:
        with self._lock:
            self._in_use -= 1
            self._held[project] -= 1
            if self._held[project] <= 0:
                del self._held[project]
            if was_overdue:
                self._overdue -= 1
            # waiters of several projects wait on one condition: each checks its own share
            self._lock.notify_all()

    def mark_overdue(self) -> None:
        """A held slot's detector passed its time limit and is still running."""
        with self._lock:
            self._overdue += 1

    def busy_message(self, *, project: Hashable = None) -> str:
        with self._lock:
            if self._held[project] >= self.per_project and self._in_use < self._capacity:
                return (
                    f"this project's {self.per_project} of the {self._capacity} detector slots "
                    "are in use (the others are kept for other projects); retry later"
                )
            return (
                f"all {self._capacity} detector slots are in use "
                f"({self._overdue} by detectors still running past their time limit); "
                "retry later"
            )


class Slot:
    """One taken slot. Leaving its ``with`` block gives it back, unless a detector thread
    took it over (:meth:`hand_over`): that thread gives it back when it really ends."""

    def __init__(self, slots: DetectorSlots, project: Hashable = None) -> None:
        self.slots = slots
        self.project = project
        self.handed_over = False

    def hand_over(self) -> None:
        self.handed_over = True

    def release(self, *, was_overdue: bool = False) -> None:
        self.slots.release(project=self.project, was_overdue=was_overdue)

    def __enter__(self) -> Slot:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self.handed_over:
            self.release()
