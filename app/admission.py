"""Admission with fair shares: a bounded number of running and waiting requests, per tenant.

Reads and writes each pass one gate per process. A request that finds every running slot
and waiting place taken is refused at once (429 + Retry-After) instead of queueing without
bound, so memory stays bounded by ``(max_concurrent + max_pending)`` requests.

First come, first served let one project take the whole gate: a flood of 2,000-span
batches from project A had 3 of 7 of project B's one-span batches refused, and 64 slow
searches from one key held every read slot for ~30 s. So the gate knows whose request it
is (a *tenant*: the project, or the credential before its project is known) and

* holds back ``reserved`` running slots from any one tenant: a tenant runs at most
  ``max_concurrent - reserved`` requests at once, so another tenant always finds a slot;
* gives one tenant at most half the waiting places;
* hands a freed slot to the waiting tenant that runs the fewest requests (first come
  among equals), not to the oldest waiter, so a tenant with a long queue waits its turn.

With one tenant alone the gate behaves as before but for the reserved slots (by default a
quarter of them, at least one). This is the usual "per-flow fair queueing with a per-flow
cap" shape (Demers, Keshav and Shenker, SIGCOMM 1989), in its simplest form: every request
costs one slot.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


class Overloaded(Exception):
    """The gate is saturated (for this tenant); retry after ``retry_after`` seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__("saturated")
        self.retry_after = retry_after


@dataclass
class _Tenant:
    running: int = 0
    waiting: deque[tuple[int, asyncio.Future[None]]] = field(default_factory=deque)

    @property
    def inside(self) -> int:
        return self.running + len(self.waiting)


class FairAdmission:
    """A gate with ``max_concurrent`` running slots and ``max_pending`` waiting places,
    shared fairly among tenants.

    >>> gate = FairAdmission(max_concurrent=4, max_pending=8, retry_after=1)
    >>> gate.per_tenant_running, gate.per_tenant_capacity, gate.capacity
    (3, 7, 12)
    """

    def __init__(
        self,
        *,
        max_concurrent: int,
        max_pending: int,
        retry_after: int,
        reserved: int | None = None,
    ) -> None:
        if max_concurrent < 1 or max_pending < 0:
            raise ValueError("max_concurrent must be >= 1 and max_pending >= 0")
        if reserved is None:
            reserved = max(1, max_concurrent // 4) if max_concurrent > 1 else 0
        self.max_concurrent = max_concurrent
        self.capacity = max_concurrent + max_pending
        self.per_tenant_running = max(1, max_concurrent - reserved)
        self.per_tenant_capacity = self.per_tenant_running + (max_pending + 1) // 2
        self.retry_after = retry_after
        self._tenants: dict[Hashable, _Tenant] = {}
        self._running = 0
        self._inside = 0
        self._arrivals = itertools.count()

    @property
    def depth(self) -> int:
        """Requests admitted and not finished (running + waiting)."""
        return self._inside

    def admits(self, tenant: Hashable) -> bool:
        """Whether a request of ``tenant`` would be admitted now (running or waiting)."""
        held = self._tenants.get(tenant)
        inside = held.inside if held is not None else 0
        return self._inside < self.capacity and inside < self.per_tenant_capacity

    @asynccontextmanager
    async def slot(self, tenant: Hashable = None) -> AsyncIterator[None]:
        """Run the block in one of ``tenant``'s slots; :class:`Overloaded` when refused."""
        if not self.admits(tenant):
            raise Overloaded(self.retry_after)
        state = self._tenants.setdefault(tenant, _Tenant())
        self._inside += 1
        try:
            if self._can_run(state) and not state.waiting:
                self._start(state)
            else:
                await self._wait(state)
            try:
                yield
            finally:
                self._finish(state)
        finally:
            self._inside -= 1
            if state.inside == 0:
                self._tenants.pop(tenant, None)

    def _can_run(self, state: _Tenant) -> bool:
        return self._running < self.max_concurrent and state.running < self.per_tenant_running

    def _start(self, state: _Tenant) -> None:
        self._running += 1
        state.running += 1

    async def _wait(self, state: _Tenant) -> None:
        ticket: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (next(self._arrivals), ticket)
        state.waiting.append(entry)
        try:
            await ticket
        except BaseException:
            if ticket.done() and not ticket.cancelled():
                self._finish(state)  # granted, then cancelled before it ran: give it back
            else:
                state.waiting.remove(entry)
            raise

    def _finish(self, state: _Tenant) -> None:
        self._running -= 1
        state.running -= 1
        self._dispatch()

    def _dispatch(self) -> None:
        """Hand free slots to waiting tenants, fewest running first, then first come."""
        while self._running < self.max_concurrent:
            eligible = [
                s
                for s in self._tenants.values()
                if s.waiting and s.running < self.per_tenant_running
            ]
            if not eligible:
                return
            state = min(eligible, key=lambda s: (s.running, s.waiting[0][0]))
            _, ticket = state.waiting.popleft()
            self._start(state)
            ticket.set_result(None)
