"""A real HTTP receiver on 127.0.0.1 that records requests and can be told to fail."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.conftest import free_port


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    status: int

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """``fail(n, status, headers)`` makes the next n requests answer ``status``."""

    port: int = field(default_factory=free_port)
    requests: list[Received] = field(default_factory=list)
    _plan: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def fail(self, n: int, status: int = 503, headers: dict[str, str] | None = None) -> None:
        with self._lock:
            self._plan.extend([(status, headers or {})] * n)

    def delivered(self) -> list[Received]:
        return [r for r in self.requests if 200 <= r.status < 300]

    def wait_for(self, n: int, timeout: float = 20.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.delivered()) < n:
            if time.monotonic() > deadline:
                raise AssertionError(f"receiver got {len(self.delivered())} deliveries, wanted {n}")
            time.sleep(0.05)
        return self.delivered()

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    status, headers = receiver._plan.pop(0) if receiver._plan else (200, {})
                    receiver.requests.append(
                        Received("POST", self.path, dict(self.headers.items()), body, status)
                    )
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
