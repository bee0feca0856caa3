"""Backpressure for the write path: a bounded number of running and waiting batches.

A batch that finds every running slot and waiting place taken is refused at once with
429 + Retry-After instead of queueing without bound, so memory stays bounded by
``(max_concurrent + max_pending) * max_request_bytes``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class Overloaded(Exception):
    """The write path is saturated; the client should retry after ``retry_after`` seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__("write path saturated")
        self.retry_after = retry_after


class WriteAdmission:
    def __init__(self, *, max_concurrent: int, max_pending: int, retry_after: int) -> None:
        self._running = asyncio.Semaphore(max_concurrent)
        self._capacity = max_concurrent + max_pending
        self._inside = 0
        self.retry_after = retry_after

    @property
    def capacity(self) -> int:
        """Running plus waiting places; a batch beyond them is refused."""
        return self._capacity

    @property
    def depth(self) -> int:
        """Batches admitted and not finished (running + waiting)."""
        return self._inside

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._inside >= self._capacity:
            raise Overloaded(self.retry_after)
        self._inside += 1
        try:
            async with self._running:
                yield
        finally:
            self._inside -= 1
