"""Admission control for reads: a bounded number of running and waiting GET requests.

Reads are sync routes: each holds a worker thread and a database connection while it runs.
Unbounded, 128 clients reading at once took every thread and pooled connection, so answers
waited 30 s for the pool and failed with 503, ``/healthz`` (queued behind them for a
thread) did not answer, and the scheduler's jobs timed out on the same pool. Here at most
``max_concurrent`` reads run and ``max_pending`` wait; a read beyond that is refused at
once with 429 + Retry-After, like a saturated write (:mod:`app.ingest.admission`). The
database pool is sized for the reads and writes admitted (:func:`pool_size_for`), so an
admitted request never waits on it for long.

A raw ASGI middleware, as :mod:`app.api.request_guard` is. Not admitted here: liveness,
readiness and ``/metrics`` (they must answer during a load), static assets (no database),
and every non-GET request (writes have their own admission; the rest are rare admin actions).
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse

from app.ingest.admission import WriteAdmission

EXEMPT_PREFIXES = ("/healthz", "/readyz", "/metrics", "/static/")
READ_METHODS = ("GET", "HEAD")


def pool_size_for(*, max_concurrent_reads: int, max_concurrent_writes: int) -> int:
    """Connections a process needs for the requests it admits at once.

    An admitted request holds at most two at a time (the key check's and its session's),
    plus headroom for the non-GET routes that are not admitted.

    >>> pool_size_for(max_concurrent_reads=16, max_concurrent_writes=4)
    44
    """
    return 2 * (max_concurrent_reads + max_concurrent_writes) + 4


class ReadAdmission:
    """Wraps the app: GET/HEAD requests pass through a :class:`WriteAdmission`-style gate."""

    def __init__(self, app: Any, *, max_concurrent: int, max_pending: int, retry_after: int):
        self.app = app
        self.gate = WriteAdmission(
            max_concurrent=max_concurrent, max_pending=max_pending, retry_after=retry_after
        )
        self.retry_after = retry_after

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in READ_METHODS
            or scope["path"].startswith(EXEMPT_PREFIXES)
        ):
            await self.app(scope, receive, send)
            return
        if self.gate.depth >= self.gate.capacity:
            await self._refuse(scope, receive, send)
            return
        async with self.gate.slot():
            await self.app(scope, receive, send)

    async def _refuse(self, scope: Any, receive: Any, send: Any) -> None:
        response = JSONResponse(
            {"detail": "the server is answering as many reads as it can; retry later"},
            status_code=429,
            headers={"Retry-After": str(self.retry_after)},
        )
        await response(scope, receive, send)
