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
* while another tenant is active (has requests inside, or had within ``recent_s``), runs
  at most ``contended_share`` requests of each tenant at once (default one);
* gives one tenant at most half the waiting places;
* hands a freed slot to the waiting tenant that runs the fewest requests (first come
  among equals), not to the oldest waiter, so a tenant with a long queue waits its turn.

Why one request per tenant under contention: the requests of one process share one
interpreter lock, so a request's time grows with the requests running beside it. With six
of project A's searches running, project B's reads took 10x their time alone although
each was admitted at once. A tenant alone keeps every slot but the reserved ones. This is
the usual per-flow fair queueing with a per-flow cap (Demers, Keshav and Shenker, SIGCOMM
1989) in its simplest form: every request costs one slot.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


class Overloaded(Exception):
    """The gate is saturated (for this tenant); retry after ``retry_after`` seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__("saturated")
        self.retry_after = retry_after


@dataclass
class _Tenant:
    key: Hashable
    running: int = 0
    waiting: deque[tuple[int, asyncio.Future[None]]] = field(default_factory=deque)

    @property
    def inside(self) -> int:
        return self.running + len(self.waiting)


class Activity:
    """Which tenants have requests inside a gate, or had within ``recent_s``.

    >>> now = [0.0]
    >>> board = Activity(recent_s=2.0, clock=lambda: now[0])
    >>> board.enter("B"); board.others_active("A")
    True
    >>> board.leave("B"); now[0] = 1.0; board.others_active("A")
    True
    >>> now[0] = 3.5; board.others_active("A"), board.others_active("B")
    (False, False)
    """

    def __init__(
        self,
        *,
        recent_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        contends: Callable[[Hashable], bool] = lambda tenant: True,
    ) -> None:
        self.recent_s = recent_s
        self._clock = clock
        # Whose activity holds the others to their contended share: the app counts
        # projects only, not a key's first requests (the same project, its project not
        # known yet) nor unauthenticated clients (answered 401 at once).
        self._contends = contends
        self._inside: dict[Hashable, int] = {}
        self._running: dict[Hashable, int] = {}  # over every gate
        self._seen: dict[Hashable, float] = {}
        self._gates: list[FairAdmission] = []

    def running(self, tenant: Hashable) -> int:
        """``tenant``'s requests running in any gate."""
        return self._running.get(tenant, 0)

    def started(self, tenant: Hashable) -> None:
        self._running[tenant] = self._running.get(tenant, 0) + 1

    def join(self, gate: FairAdmission) -> None:
        """``gate`` shares this board: it is asked to start waiting requests when one ends."""
        self._gates.append(gate)

    def finished(self, tenant: Hashable) -> None:
        """One of ``tenant``'s requests ended: every gate may now start a waiting one."""
        _decrement(self._running, tenant)
        self.seen(tenant)
        # The gates take turns to go first: a project's reads and writes share its one
        # contended slot, and the gate asked first would otherwise always win it.
        self._gates.append(self._gates.pop(0))
        for gate in list(self._gates):
            gate.dispatch()

    def enter(self, tenant: Hashable) -> None:
        self._inside[tenant] = self._inside.get(tenant, 0) + 1
        self.seen(tenant)

    def leave(self, tenant: Hashable) -> None:
        _decrement(self._inside, tenant)
        self.seen(tenant)

    def seen(self, tenant: Hashable) -> None:
        if self._contends(tenant):
            self._seen[tenant] = self._clock()

    def others_active(self, tenant: Hashable) -> bool:
        """Whether a contending tenant other than ``tenant`` is active."""
        now, idle, active = self._clock(), [], False
        for other, at in self._seen.items():
            if other == tenant:
                continue
            if other in self._inside or now - at < self.recent_s:
                active = True
                break
            idle.append(other)
        for other in idle:  # idle for recent_s: forgotten
            del self._seen[other]
        return active


def _decrement(counts: dict[Hashable, int], tenant: Hashable) -> None:
    """One fewer for ``tenant``; a tenant at zero leaves the map (it stays small)."""
    left = counts.get(tenant, 0) - 1
    if left > 0:
        counts[tenant] = left
    else:
        counts.pop(tenant, None)


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
        contended_share: int = 1,
        activity: Activity | None = None,
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
        self.contended_share = max(1, min(contended_share, self.per_tenant_running))
        # Shared by the read and write gates of a process: a project reading is active for
        # the write gate too (its writes and reads share the process with the others').
        self.activity = activity if activity is not None else Activity()
        self.activity.join(self)
        self._tenants: dict[Hashable, _Tenant] = {}
        self._running = 0
        self._inside = 0
        self._arrivals = itertools.count()

    @property
    def depth(self) -> int:
        """Requests admitted and not finished (running + waiting)."""
        return self._inside

    def running(self, tenant: Hashable) -> int:
        """How many of ``tenant``'s requests run now."""
        held = self._tenants.get(tenant)
        return 0 if held is None else held.running

    def admits(self, tenant: Hashable) -> bool:
        """Whether a request of ``tenant`` would be admitted now (running or waiting)."""
        held = self._tenants.get(tenant)
        inside = held.inside if held is not None else 0
        return self._inside < self.capacity and inside < self.per_tenant_capacity

    @asynccontextmanager
    async def slot(self, tenant: Hashable = None) -> AsyncIterator[None]:
        """Run the block in one of ``tenant``'s slots; :class:`Overloaded` when refused."""
        release = await self.acquire(tenant)
        try:
            yield
        finally:
            release()

    async def acquire(self, tenant: Hashable = None) -> Callable[[], None]:
        """Take one of ``tenant``'s slots, waiting for it; return the function that gives
        it back (once, however often it is called). :class:`Overloaded` when refused."""
        if not self.admits(tenant):
            raise Overloaded(self.retry_after)
        state = self._tenants.setdefault(tenant, _Tenant(tenant))
        self.activity.enter(tenant)
        self._inside += 1
        try:
            if self._can_run(state) and not state.waiting:
                self._start(state)
            else:
                await self._wait(state)
        except BaseException:
            self._leave(state)
            raise
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._finish(state)
                self._leave(state)

        return release

    def _leave(self, state: _Tenant) -> None:
        self._inside -= 1
        self.activity.leave(state.key)
        if state.inside == 0:
            self._tenants.pop(state.key, None)

    def _can_run(self, state: _Tenant) -> bool:
        if self._running >= self.max_concurrent or state.running >= self.per_tenant_running:
            return False
        # while another tenant is active, a tenant's share counts its requests in every gate
        contended = self.activity.others_active(state.key)
        return not contended or self.activity.running(state.key) < self.contended_share

    def _start(self, state: _Tenant) -> None:
        self._running += 1
        state.running += 1
        self.activity.started(state.key)

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
        self.activity.finished(state.key)

    def dispatch(self) -> None:
        """Hand free slots to waiting tenants, fewest running first, then first come."""
        while self._running < self.max_concurrent:
            eligible = [s for s in self._tenants.values() if s.waiting and self._can_run(s)]
            if not eligible:
                return
            state = min(eligible, key=lambda s: (s.running, s.waiting[0][0]))
            _, ticket = state.waiting.popleft()
            self._start(state)
            ticket.set_result(None)
