"""The read gate over real sockets: a client that never reads its answer gives its slot
back after the send timeout, and one tenant holding its share leaves other tenants a slot."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from app.admission import Activity
from app.api.read_admission import ReadAdmission
from app.auth.tenants import TenantDirectory
from tests.conftest import LiveServer

CHUNK = b"x" * 65536


def _big(_request: Request) -> Response:
    # sent in parts, as FileResponse sends a file: 24 MB, far past the sockets' buffers
    return StreamingResponse(iter([CHUNK] * 384), media_type="application/octet-stream")


def _small(_request: Request) -> Response:
    return PlainTextResponse("ok")


@pytest.fixture
def server() -> Iterator[LiveServer]:
    tenants = TenantDirectory()
    tenants.learn("tt_a", project_id=1)
    tenants.learn("tt_b", project_id=2)
    app = ReadAdmission(
        Starlette(routes=[Route("/big", _big), Route("/small", _small)]),
        max_concurrent=2,
        max_pending=0,
        retry_after=1,
        tenants=tenants,
        send_timeout=1.0,
        activity=Activity(),
    )
    with LiveServer(app) as live:
        yield live


def _never_reading(port: int, key: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(f"GET /big HTTP/1.1\r\nHost: x\r\nx-api-key: {key}\r\n\r\n".encode())
    return sock


def _status(url: str, key: str) -> int:
    with httpx.Client(base_url=url, timeout=10) as c:
        return c.get("/small", headers={"x-api-key": key}).status_code


def test_readers_that_stop_reading_hold_no_slot_and_are_dropped(
    server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="telltale.api")
    stuck = []
    for _ in range(4):  # twice the slots, each answer started before the next is asked
        stuck.append(_never_reading(server.port, "tt_a"))
        time.sleep(0.1)
    try:
        time.sleep(0.2)  # the server is blocked writing to A's sockets
        # sending an answer holds no slot: A and B are both served at once
        for key in ("tt_a", "tt_b"):
            started = time.monotonic()
            assert _status(server.url, key) == 200
            assert time.monotonic() - started < 0.5
        # each stuck answer is given up once its client took nothing for the send timeout
        deadline = time.monotonic() + 10
        while sum("dropped a read of /big" in r.message for r in caplog.records) < 4:
            assert time.monotonic() < deadline, [r.message for r in caplog.records]
            time.sleep(0.1)
    finally:
        for sock in stuck:
            sock.close()
