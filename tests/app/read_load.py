"""A bounded read load on loopback, run in its own process (its own GIL, so the load's
client does not slow the server it measures): ``python -m tests.app.read_load URL KEY``.

``clients`` tasks read ``GET /api/v1/streams`` for ``seconds``, honouring Retry-After; one
more asks ``/healthz`` every 0.2 s. Prints ``{"statuses": {...}, "health_s": [...],
"transport_errors": {...}}``.

A read that fails in transport (``httpx.ReadError``: a pooled keep-alive connection the
server closed as the client reused it, which a loaded machine makes likelier) is counted
by its exception's name and the client goes on, as a browser retries such a GET; the
test bounds how many there may be, rather than failing the whole load on the first.
"""

from __future__ import annotations

import asyncio
import collections
import json
import sys
import time

import httpx


async def load(url: str, key: str, *, seconds: float, clients: int) -> dict[str, object]:
    statuses: collections.Counter[int] = collections.Counter()
    errors: collections.Counter[str] = collections.Counter()
    health_s: list[float] = []
    headers = {"Authorization": f"Bearer {key}"}
    until = time.monotonic() + seconds

    async def reader(c: httpx.AsyncClient) -> None:
        while time.monotonic() < until:
            try:
                r = await c.get("/api/v1/streams", headers=headers)
            except httpx.TransportError as exc:
                errors[type(exc).__name__] += 1
                continue
            statuses[r.status_code] += 1
            if r.status_code == 429:
                await asyncio.sleep(float(r.headers["retry-after"]))

    async def prober(c: httpx.AsyncClient) -> None:
        # Its own connection, opened before the load: a burst of 128 connects can overflow
        # the listen backlog, and a dropped SYN is a client-side second, not the server's.
        await c.get("/healthz")
        await asyncio.sleep(0.5)  # into the load
        while time.monotonic() < until:
            start = time.monotonic()
            r = await c.get("/healthz")
            health_s.append(time.monotonic() - start if r.status_code == 200 else 999.0)
            await asyncio.sleep(0.2)

    limits = httpx.Limits(max_connections=clients + 8)
    async with (
        httpx.AsyncClient(base_url=url, timeout=20, limits=limits) as c,
        httpx.AsyncClient(base_url=url, timeout=20) as health,
    ):
        await health.get("/healthz")
        await asyncio.gather(prober(health), *(reader(c) for _ in range(clients)))
    return {"statuses": dict(statuses), "health_s": health_s, "transport_errors": dict(errors)}


if __name__ == "__main__":
    url, key, seconds, clients = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    print(json.dumps(asyncio.run(load(url, key, seconds=seconds, clients=clients))))
