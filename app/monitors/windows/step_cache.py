"""The steps of a window's traces, kept by the scheduler from one cycle to the next.

A monitor's windows slide by one interval a cycle (a 2 h window every 15 minutes), so
seven eighths of the traces a cycle samples were sampled by the cycle before, and their
spans have not changed: reading and mapping the spans into steps again was most of a
cycle (measured: 60% of the first monitor's window load at 10,000 traces/h went to the
span rows and the step mapping). The steps of a trace are a function of its spans and
span events alone, and every piece of a trace that arrives moves the trace's
``updated_at`` (:func:`app.ingest.trace_upsert.touch_traces`, the trace upsert, the OTLP
receiver), which the window's key query reads already. So a trace's steps are kept under
the ``updated_at`` they were read at, and reused only while it is still the stored one; a
grown trace is read again. Everything else of a record — the trace row, its scores (a label
arrives hours later without touching the trace), its vectors — is read every cycle.

Entries a cycle did not use are dropped at its end (:meth:`StepCache.end_cycle`), so the
cache holds at most the last cycle's sampled traces (~100 MB for 40,000 traces of 7 steps).
One per scheduler process; a process that restarts starts empty and pays one full load.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from detectors.records import Step

Key = tuple[int, str]


class StepCache:
    """Steps by ``(project_id, trace_id)``, valid while the trace's ``updated_at`` is.

    Thread-safe: a scheduler tick and ``run now`` requests lend it to their cycles."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[Key, tuple[datetime, tuple[Step, ...]]] = {}
        self._used: set[Key] = set()
        self.hits = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, project_id: int, trace_id: str, updated_at: Any) -> tuple[Step, ...] | None:
        """The steps read at ``updated_at``, or None (never read, or the trace grew since)."""
        key = (project_id, trace_id)
        with self._lock:
            found = self._entries.get(key)
            if found is None or updated_at is None or found[0] != updated_at:
                return None
            self._used.add(key)
            self.hits += 1
            return found[1]

    def put(self, project_id: int, trace_id: str, updated_at: Any, steps: tuple[Step, ...]) -> None:
        if updated_at is None:
            return
        key = (project_id, trace_id)
        with self._lock:
            self._entries[key] = (updated_at, steps)
            self._used.add(key)

    def end_cycle(self) -> None:
        """Forget the traces no cycle read since the last end."""
        with self._lock:
            self._entries = {k: v for k, v in self._entries.items() if k in self._used}
            self._used = set()
