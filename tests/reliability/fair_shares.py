"""One project attacks, another is measured: the harness of the fair-share test and bench.

Project A, with its ingest, admin and read keys, does at once what security round 4 found
could take the service from everyone (issue #49, items 1-4 and 6):

1. a 12,000-span trace whose parent chain alternates failed LLM and tool steps, each with
   its own error type, sent in about a second;
2. twelve identity exclusion patterns ``x*``, and two FM-6 monitors with a billion
   permutations (both refused now: counted, not retried);
3. ``run now`` of its monitors from two clients without pause;
4. eight sockets asking for its 9.6 MB image and never reading, and 64 text searches of its
   traces page at once, again and again;
6. 2,000-span batches from two clients without pause.

Project B meanwhile reads its traces list, runs its monitor now and sends a trace whose
derivation it waits for. :func:`measure_b` times those; the attack runs in its own
process (``python -m tests.reliability.fair_shares URL KEYS_JSON SECONDS``, its own GIL),
so its client work does not slow the server it measures. Every loop is bounded in time.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import secrets
import socket
import statistics
import sys
import threading
import time
from collections import Counter
from typing import Any

import httpx
import numpy as np

JSON = {"content-type": "application/json"}


def _kv(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _span(trace: str, span: str, parent: str | None, i: int, *, failed: bool) -> dict[str, Any]:
    tool = i % 2 == 0
    attributes = (
        [_kv("gen_ai.operation.name", "execute_tool"), _kv("gen_ai.tool.name", "lookup")]
        if tool
        else [_kv("gen_ai.operation.name", "chat"), _kv("gen_ai.request.model", "m")]
    )
    if failed:
        attributes.append(_kv("error.type", f"E{i}"))
    start = 1_700_000_000_000_000_000 + i * 1000
    return {
        "traceId": trace, "spanId": span, **({"parentSpanId": parent} if parent else {}),
        "name": "execute_tool lookup" if tool else "chat m", "kind": 1,
        "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 500),
        "attributes": attributes, "status": {"code": 2 if failed else 1},
    }  # fmt: skip


def otlp_body(spans: list[dict[str, Any]], service: str = "agent") -> bytes:
    resource = {"attributes": [_kv("service.name", service)]}
    return json.dumps(
        {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans}]}]}
    ).encode()


def chain(n: int, *, trace: str | None = None, failed: bool = True) -> list[dict[str, Any]]:
    """A parent chain of ``n`` alternating tool and LLM spans."""
    trace = trace or secrets.token_hex(16)
    ids = [secrets.token_hex(8) for _ in range(n)]
    return [_span(trace, ids[i], ids[i - 1] if i else None, i, failed=failed) for i in range(n)]


def small_trace() -> list[dict[str, Any]]:
    """A normal agent run: an LLM call, a tool call that fails now and then, an answer."""
    return chain(3, failed=secrets.randbelow(5) == 0)


def noise_png(side: int = 1800) -> bytes:
    from PIL import Image

    pixels = np.random.default_rng(0).integers(0, 256, size=(side, side, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG", compress_level=1)
    return out.getvalue()


def login_cookie(c: httpx.Client, key: str) -> None:
    page = c.get("/login")
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert token is not None
    r = c.post("/login", data={"api_key": key, "csrf": token.group(1)}, follow_redirects=False)
    assert r.status_code == 303, r.text


# --- Project B: what is measured -----------------------------------------------------


def measure_b(url: str, keys: dict[str, Any], *, engine: Any, rounds: int = 3) -> dict[str, float]:
    """B's median GET latency, ``run now`` latency and derive delay (seconds)."""
    from sqlalchemy import select

    from app.models import Trace

    gets, runs, derives = [], [], []
    with httpx.Client(base_url=url, timeout=120) as c:
        read, admin = _auth(keys["b_read"]), _auth(keys["b_admin"])
        for _ in range(rounds):
            for _ in range(5):
                began = time.monotonic()
                assert (
                    c.get("/api/v1/traces", params={"limit": 50}, headers=read).status_code == 200
                )
                gets.append(time.monotonic() - began)
            began = time.monotonic()
            r = c.post(f"/api/v1/monitors/{keys['b_monitor']}/run", json={}, headers=admin)
            assert r.status_code == 200, r.text
            runs.append(time.monotonic() - began)
            spans = small_trace()
            sent = time.monotonic()
            r = c.post("/v1/traces", content=otlp_body(spans, "b-agent"),
                       headers={**_auth(keys["b_ingest"]), **JSON})  # fmt: skip
            assert r.status_code == 200, r.text
            tid = spans[0]["traceId"]
            while True:
                with engine.connect() as conn:
                    at = conn.scalar(select(Trace.derived_at).where(Trace.trace_id == tid))
                if at is not None:
                    break
                assert time.monotonic() - sent < 120, "B's trace was never derived"
                time.sleep(0.1)
            derives.append(time.monotonic() - sent)
    return {
        "get_s": statistics.median(gets),
        "run_now_s": statistics.median(runs),
        "derive_s": statistics.median(derives),
    }


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


# --- Project A: the attack -------------------------------------------------------------


KINDS = ("huge_trace", "refused_settings", "slow_readers", "search", "run_now", "flood")


def attack(
    url: str, keys: dict[str, Any], seconds: float, kinds: tuple[str, ...] = KINDS
) -> dict[str, Any]:
    """Everything (``kinds``) at once for ``seconds``; returns what A was answered, by kind."""
    until = time.monotonic() + seconds
    seen: dict[str, Counter[int]] = {}
    lock = threading.Lock()

    def count(kind: str, status: int) -> None:
        with lock:
            seen.setdefault(kind, Counter())[status] += 1

    ingest = {**_auth(keys["a_ingest"]), **JSON}
    admin = _auth(keys["a_admin"])

    def huge_trace(c: httpx.Client) -> None:
        spans = chain(12_000)
        for lo in range(0, len(spans), 2_000):
            r = c.post("/v1/traces", content=otlp_body(spans[lo : lo + 2_000]), headers=ingest)
            count("huge_trace", r.status_code)

    def refused_settings(c: httpx.Client) -> None:
        rules = {"input_identity": {"exclude_patterns": ["x*"] * 12}}
        count("x_star_patterns", c.put("/api/v1/project/derived-fields", json=rules,
                                       headers=admin).status_code)  # fmt: skip
        for name in ("fm6-a", "fm6-b"):
            body = {"name": name, "failure_mode": "FM-6", "time_limit_seconds": 3,
                    "detector_params": {"method": "mmd", "n_permutations": 1_000_000_000}}  # fmt: skip
            count("fm6_billion", c.post("/api/v1/monitors", json=body, headers=admin).status_code)

    def run_now(c: httpx.Client) -> None:
        while time.monotonic() < until:
            for mid in keys["a_monitors"]:
                count("run_now", c.post(f"/api/v1/monitors/{mid}/run", json={},
                                        headers=admin).status_code)  # fmt: skip

    def flood(c: httpx.Client) -> None:
        template = otlp_body(chain(2_000, trace="f" * 32, failed=False))
        while time.monotonic() < until:
            body = template.replace(b"f" * 32, secrets.token_hex(16).encode())
            count("flood", c.post("/v1/traces", content=body, headers=ingest).status_code)

    def slow_readers() -> None:
        port = int(url.rsplit(":", 1)[1])
        socks = []
        for _ in range(8):
            s = socket.create_connection(("127.0.0.1", port))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(f"GET /api/v1/media/{keys['a_image']}/image HTTP/1.1\r\nHost: x\r\n"
                      f"Authorization: Bearer {keys['a_read']}\r\n\r\n".encode())  # fmt: skip
            socks.append(s)
        count("slow_readers", len(socks))
        while time.monotonic() < until:
            time.sleep(0.2)
        for s in socks:
            s.close()

    with httpx.Client(base_url=url, timeout=60) as sync:  # A's web login, before the rest
        login_cookie(sync, keys["a_read"])
        cookies = sync.cookies

    async def searches() -> None:
        async with httpx.AsyncClient(base_url=url, timeout=60, cookies=cookies) as c:

            async def one() -> None:
                while time.monotonic() < until:
                    r = await c.get("/traces", params={"q": "lookup failed"})
                    count("search", r.status_code)
                    if r.status_code == 429:
                        await asyncio.sleep(float(r.headers.get("retry-after", "1")))

            await asyncio.gather(*(one() for _ in range(64)))

    def with_client(fn: Any) -> Any:
        def run() -> None:
            with httpx.Client(base_url=url, timeout=120) as c:
                fn(c)

        return run

    plan = {
        "huge_trace": [with_client(huge_trace)],
        "refused_settings": [with_client(refused_settings)],
        "slow_readers": [slow_readers],
        "search": [lambda: asyncio.run(searches())],
        "run_now": [with_client(run_now)] * 2,
        "flood": [with_client(flood)] * 2,
    }
    threads = [threading.Thread(target=fn) for kind in kinds for fn in plan[kind]]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 180)
    return {kind: dict(statuses) for kind, statuses in seen.items()}


if __name__ == "__main__":
    # An attacker's client runs on a machine of its own; here it shares the server's two
    # cores, so it yields them first (its load still saturates what the server admits).
    os.nice(10)
    target, keys_json, duration = sys.argv[1], sys.argv[2], float(sys.argv[3])
    chosen = tuple(sys.argv[4].split(",")) if len(sys.argv) > 4 else KINDS
    print(json.dumps(attack(target, json.loads(keys_json), duration, chosen)))
