"""A file the standalone scheduler touches while it is healthy, for a container healthcheck.

`telltale scheduler` serves no HTTP, and "the process exists" says nothing: a scheduler
whose database is gone or whose scheduler thread died would pass. So the main loop touches
the file only when a ``SELECT 1`` answers and every service reports itself running; the
healthcheck fails once the file is older than a few beats (docker/compose.yaml).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from sqlalchemy import Engine, text

log = logging.getLogger("telltale.scheduler")

BEAT_SECONDS = 10.0


class Running(Protocol):
    @property
    def running(self) -> bool: ...


class Heartbeat:
    def __init__(self, path: str, engine: Engine, services: Sequence[Running]) -> None:
        self.path = Path(path)
        self.engine = engine
        self.services = services
        self._last = 0.0

    def maybe_touch(self, now: float | None = None) -> bool:
        """Touch the file if a beat is due and all is well; True when it was touched."""
        now = time.monotonic() if now is None else now
        if now - self._last < BEAT_SECONDS:
            return False
        self._last = now
        if not all(s.running for s in self.services):
            log.warning("heartbeat withheld: a service stopped")
            return False
        try:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception as exc:
            log.warning("heartbeat withheld: the database does not answer (%s)", exc)
            return False
        self.path.touch()
        return True
