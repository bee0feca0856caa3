"""How many detector computations may run in this process at once, timed-out ones included.

Python cannot kill a thread, so a detector past its time limit goes on computing until it
returns. Without a bound, a slow monitor re-run every interval (or ``run now`` clicked
repeatedly) piles up threads that each hold their windows in memory. A slot is taken
before a run loads its windows and given back only when its detector thread really ends,
so at most ``capacity`` computations (runaway ones counted) ever share the CPU. A scheduled
run waits for a slot up to its own time limit, then fails; ``run now`` is refused at once.
"""

from __future__ import annotations

import threading
from types import TracebackType


class DetectorsBusy(Exception):
    """Every slot is taken; the message says by how many runs past their limit."""


class DetectorSlots:
    """A counting semaphore whose capacity can be set from settings at start-up.

    >>> slots = DetectorSlots(capacity=1)
    >>> slots.try_acquire(), slots.try_acquire()
    (True, False)
    >>> slots.release(); slots.try_acquire()
    True
    """

    def __init__(self, capacity: int) -> None:
        self._lock = threading.Condition()
        self._in_use = 0
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

    def take(self, timeout_s: float = 0.0) -> Slot | None:
        """A slot (a context manager that gives it back), or None after ``timeout_s``."""
        return Slot(self) if self.try_acquire(timeout_s) else None

    def try_acquire(self, timeout_s: float = 0.0) -> bool:
        """Take a slot, waiting up to ``timeout_s`` for one to come back."""
        with self._lock:
            if not self._lock.wait_for(lambda: self._in_use < self._capacity, timeout_s):
                return False
            self._in_use += 1
            return True

    def release(self, *, was_overdue: bool = False) -> None:
        with self._lock:
            self._in_use -= 1
            if was_overdue:
                self._overdue -= 1
            self._lock.notify()

    def mark_overdue(self) -> None:
        """A held slot's detector passed its time limit and is still running."""
        with self._lock:
            self._overdue += 1

    def busy_message(self) -> str:
        with self._lock:
            return (
                f"all {self._capacity} detector slots are in use "
                f"({self._overdue} by detectors still running past their time limit); "
                "retry later"
            )


class Slot:
    """One taken slot. Leaving its ``with`` block gives it back, unless a detector thread
    took it over (:meth:`hand_over`): that thread gives it back when it really ends."""

    def __init__(self, slots: DetectorSlots) -> None:
        self.slots = slots
        self.handed_over = False

    def hand_over(self) -> None:
        self.handed_over = True

    def __enter__(self) -> Slot:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self.handed_over:
            self.slots.release()
