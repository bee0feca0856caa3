"""One load per window per scheduler cycle, shared by the monitors due in it.

The seven defaults read the same two time ranges: six of them the same traces, FM-3 and
FM-5 with their input/output vectors too. Loaded per monitor, a cycle at 10,000 traces/h
spent ~20 s loading for each of them (measured: 98% of a run). A :class:`WindowCache`
lives for one tick of the scheduler: the first monitor that asks for a window loads it,
the others get the same records (records are frozen; detectors only read them). Vectors
are attached on the first request that needs them, without reloading the traces.

Windows are shared only when their bounds are equal, so the cache also fixes the cycle's
``now``: every monitor of the tick is evaluated as of the time the tick began (its run is
still stamped with the time it really ran). Where a project's data begin
(:func:`app.monitors.windows.history.history_start`, which places a young history's baseline) is
asked once per project and cycle too. A scheduler keeps a :class:`StepCache` across its
cycles (:mod:`app.monitors.windows.step_cache`), lent to each cycle's cache as ``steps``.
``run now`` shares cycles too (:class:`app.monitors.runner.MonitorRunner`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from app.monitors.windows.step_cache import StepCache
from app.monitors.windows.trace_window import TraceSelection, TraceWindow

TraceKey = tuple[TraceSelection, datetime, datetime, datetime | None]


@dataclass
class WindowCache:
    """The windows of one scheduler cycle, evaluated as of ``now``."""

    now: datetime
    # The steps of traces unchanged since the scheduler's last cycle (app/monitors/windows/step_cache.py).
    steps: StepCache | None = None
    loads: int = 0
    hits: int = 0
    # Held while a run loads its windows: run-now requests share a cycle across threads.
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)
    _traces: dict[TraceKey, TraceWindow] = field(default_factory=dict)
    _with_vectors: set[TraceKey] = field(default_factory=set)
    _vectors: dict[tuple[Any, ...], np.ndarray] = field(default_factory=dict)
    _history_starts: dict[int, datetime | None] = field(default_factory=dict)
    _counts: dict[tuple[Any, ...], Any] = field(default_factory=dict)

    def trace_window(
        self,
        key: TraceKey,
        *,
        with_embeddings: bool,
        load: Callable[[], TraceWindow],
        attach: Callable[[TraceWindow], TraceWindow],
    ) -> TraceWindow:
        """The window for ``key``: loaded by ``load`` once, vectors added by ``attach``
        the first time a caller needs them."""
        window = self._traces.get(key)
        if window is None:
            self.loads += 1
            window = load()
        else:
            self.hits += 1
        if with_embeddings and key not in self._with_vectors:
            window = attach(window)
            self._with_vectors.add(key)
        self._traces[key] = window
        return window

    def vectors(self, key: tuple[Any, ...], load: Callable[[], np.ndarray]) -> np.ndarray:
        """An embedding window (stream and bounds in ``key``), loaded once."""
        found = self._vectors.get(key)
        if found is None:
            self.loads += 1
            found = self._vectors[key] = load()
        else:
            self.hits += 1
        return found

    def counts(self, key: tuple[Any, ...], load: Callable[[], Any]) -> Any:
        """Whole-window counts a detector reads beside a sampled window (FM-4's labels:
        :mod:`app.monitors.windows.label_counts`), counted once per cycle."""
        if key not in self._counts:
            self._counts[key] = load()
        return self._counts[key]

    def history_start(
        self, project_id: int, load: Callable[[], datetime | None]
    ) -> datetime | None:
        """Where the project's data begin, looked up once per cycle."""
        if project_id not in self._history_starts:
            self._history_starts[project_id] = load()
        return self._history_starts[project_id]
