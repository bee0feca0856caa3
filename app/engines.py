"""The process's database engines: one per kind of work, so that none waits on another's pool.

- ``requests``: the API and pages, sized for the requests admitted at once
  (:func:`app.api.read_admission.pool_size_for`);
- ``background``: the scheduler's jobs, the outbox sender and media retention. On the
  request pool a burst of reads made the jobs time out waiting for a connection;
- ``health``: ``/readyz``'s one probe, with a short pool timeout, so readiness answers (or
  says why not) while every request connection is busy.

An in-memory SQLite database is one connection that only its own engine reaches: there
all three are the request engine.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine

from app.api.read_admission import pool_size_for
from app.db import is_memory, make_engine
from app.settings import Settings

BACKGROUND_POOL = 4
HEALTH_POOL_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Engines:
    requests: Engine
    background: Engine
    health: Engine

    @classmethod
    def open(cls, settings: Settings) -> Engines:
        size = max(
            settings.db_pool_size,
            pool_size_for(
                max_concurrent_reads=settings.max_concurrent_reads,
                max_concurrent_writes=settings.max_concurrent_writes,
            ),
        )
        requests = make_engine(settings.database_url, pool_size=size)
        if is_memory(settings.database_url):
            return cls(requests, requests, requests)
        url = settings.database_url
        return cls(
            requests,
            make_engine(url, pool_size=BACKGROUND_POOL),
            make_engine(url, pool_size=1, pool_timeout=HEALTH_POOL_TIMEOUT_S),
        )

    def dispose(self) -> None:
        for engine in {id(e): e for e in (self.requests, self.background, self.health)}.values():
            engine.dispose()
