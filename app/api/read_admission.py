"""Admission control for reads: a bounded, fairly shared number of running and waiting GETs.

Reads are sync routes: each holds a worker thread and a database connection while it runs.
Unbounded, 128 clients reading at once took every thread and pooled connection, so answers
waited 30 s for the pool and failed with 503, ``/healthz`` (queued behind them for a
thread) did not answer, and the scheduler's jobs timed out on the same pool. Here at most
``max_concurrent`` reads run and ``max_pending`` wait; a read beyond that is refused at
once with 429 + Retry-After, like a saturated write. The database pool is sized for the
reads and writes admitted (:func:`pool_size_for`), so an admitted request never waits on
it for long.

The slots are shared fairly among tenants (:mod:`app.admission`, tenants from
:mod:`app.auth.tenants`): 64 slow searches of one key used to hold every slot for ~30 s
while other projects' pages timed out. A slot is held until the answer starts: eight
sockets asking for a 9.4 MB image and never reading it held every slot for as long as
they stayed open. Sending costs no slot, and a client that takes no part of the answer
for ``send_timeout`` is dropped. (The one answer produced while it is sent, a queue's
labels export, reads the database after its start: it is bounded by that timeout and the
pool, not by the gate.)

A raw ASGI middleware, as :mod:`app.api.request_guard` is. Not admitted here: liveness,
readiness and ``/metrics`` (they must answer during a load), static assets (no database),
and every non-GET request (writes have their own admission; the rest are rare admin actions).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastapi.responses import JSONResponse
from starlette.datastructures import Headers

from app.admission import Activity, FairAdmission, Overloaded
from app.auth.tenants import TenantDirectory

log = logging.getLogger("telltale.api")

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


class SendTimeout(Exception):
    """The client did not take a part of the answer within the send timeout."""


class ReadAdmission:
    """Wraps the app: GET/HEAD requests pass through a :class:`FairAdmission` gate."""

    def __init__(
        self,
        app: Any,
        *,
        max_concurrent: int,
        max_pending: int,
        retry_after: int,
        tenants: TenantDirectory,
        send_timeout: float,
        activity: Activity,
    ):
        self.app = app
        self.gate = FairAdmission(
            max_concurrent=max_concurrent,
            max_pending=max_pending,
            retry_after=retry_after,
            activity=activity,
        )
        self.tenants = tenants
        self.send_timeout = send_timeout

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in READ_METHODS
            or scope["path"].startswith(EXEMPT_PREFIXES)
        ):
            await self.app(scope, receive, send)
            return
        client = (scope.get("client") or ("?",))[0]
        tenant = self.tenants.tenant(Headers(scope=scope), client=client)
        try:
            release = await self.gate.acquire(tenant)
        except Overloaded:
            await self._refuse(scope, receive, send)
            return
        try:
            await self.app(scope, receive, self._timed(send, release))
        except SendTimeout:
            # The answer had started: nothing more can be said; the server closes the socket.
            log.info("dropped a read of %s: the client took nothing for %g s",
                     scope["path"], self.send_timeout)  # fmt: skip
        finally:
            release()

    def _timed(self, send: Any, release: Any) -> Any:
        async def timed_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                release()  # the answer is made: sending it costs the project no slot
            try:
                await asyncio.wait_for(send(message), self.send_timeout)
            except TimeoutError:
                raise SendTimeout from None

        return timed_send

    async def _refuse(self, scope: Any, receive: Any, send: Any) -> None:
        response = JSONResponse(
            {"detail": "the server is answering as many reads as it can; retry later"},
            status_code=429,
            headers={"Retry-After": str(self.gate.retry_after)},
        )
        await response(scope, receive, send)
