"""A local webhook receiver for the demo: verifies each delivery's signature and records it.

A threaded ``http.server`` on 127.0.0.1 stands in for on-call's webhook endpoint. Every
POST is checked against the channel secret (``X-Telltale-Signature``, HMAC-SHA256 over the
raw body, :func:`app.alerts.signing.verify`) before its JSON is read; a bad signature is
answered 401 and counted, never recorded as a delivery.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from app.alerts.signing import SIGNATURE_HEADER, verify

HOST = "127.0.0.1"  # the demo allow-lists exactly this address for its channel


@dataclass(frozen=True)
class Delivery:
    event: str
    failure_mode: str
    alert_id: int | None
    summary: str


class WebhookReceiver:
    """``start()`` binds a free port (or ``port``); ``url`` is what the channel posts to."""

    def __init__(
        self,
        secret: str,
        *,
        port: int = 0,
        on_delivery: Callable[[Delivery], None] | None = None,
    ) -> None:
        self.secret = secret
        self.on_delivery = on_delivery
        self.deliveries: list[Delivery] = []
        self.rejected = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((HOST, port), self._handler())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self._server.server_address[1]}/telltale"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                ok = verify(receiver.secret, body, self.headers.get(SIGNATURE_HEADER))
                delivery = _parse(body) if ok else None
                self.send_response(200 if delivery else 401)
                self.send_header("Content-Length", "0")
                self.end_headers()
                receiver._record(delivery)

            def log_message(self, *args: Any) -> None:  # the demo prints its own lines
                pass

        return Handler

    def _record(self, delivery: Delivery | None) -> None:
        with self._lock:
            if delivery is None:
                self.rejected += 1
                return
            self.deliveries.append(delivery)
        if self.on_delivery is not None:
            self.on_delivery(delivery)

    def start(self) -> WebhookReceiver:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="demo-receiver", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def snapshot(self) -> list[Delivery]:
        with self._lock:
            return list(self.deliveries)


def _parse(body: bytes) -> Delivery | None:
    try:
        payload = json.loads(body)
        alert = payload.get("alert") or {}
        return Delivery(
            event=str(payload.get("event", "")),
            failure_mode=str(alert.get("failure_mode", "")),
            alert_id=alert.get("id"),
            summary=str(alert.get("summary", ""))[:200],
        )
    except (ValueError, AttributeError):
        return None
