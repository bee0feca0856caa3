"""A loopback OpenAI-compatible judge for the evaluator tests and bench.

A real HTTP server (``ThreadingHTTPServer``, HTTP/1.1 keep-alive) that the real ``openai``
client calls. What it answers is a function of the request and of :attr:`JudgeServer.mode`:

- ``score`` (the default): ``{"score": s, "reason": ...}`` where ``s`` is 1.0 when the
  prompt's data holds the word ``RESOLVED`` and 0.0 otherwise (``answer_for`` overrides);
- ``label``: ``{"label": "pass"|"fail", ...}`` by the same rule;
- ``garbage``: text that is not JSON; ``error``: HTTP 500; ``unauthorized``: HTTP 401.

It waits ``delay`` seconds before answering (a model's latency), counts requests, and
reports ``usage`` as 50 prompt + 10 completion tokens. ``GET /stats`` answers
``{"requests": n, "max_in_flight": k}``.

    python -m bench.fake_judge --port 8765 --delay 0.3     # serves until killed
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class JudgeServer:
    def __init__(self, *, delay: float = 0.0, port: int = 0) -> None:
        self.mode = "score"
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.answer_for: Callable[[str], float] | None = None
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer._lock:
                    outer.requests.append(body)
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                if outer.delay:
                    time.sleep(outer.delay)
                status, payload = outer.answer(body)
                with outer._lock:
                    outer.in_flight -= 1
                self._send(status, payload)

            def do_GET(self) -> None:
                with outer._lock:
                    stats = {"requests": len(outer.requests), "max_in_flight": outer.max_in_flight}
                self._send(200, stats)

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the caller was killed
                    self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256

        self.server = Server(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.mode == "error":
            return 500, {"error": {"message": "the judge fell over", "type": "server_error"}}
        if self.mode == "unauthorized":
            return 401, {"error": {"message": "bad key", "type": "invalid_request_error"}}
        prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", [])[1:])
        value = self.answer_for(prompt) if self.answer_for else float("RESOLVED" in prompt)
        if self.mode == "garbage":
            text = "I think it went fine."
        elif self.mode == "label":
            text = json.dumps({"label": "pass" if value >= 0.5 else "fail", "reason": "read it"})
        else:
            text = json.dumps({"score": value, "reason": f"judged {value:.0f}"})
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": 0,
            "model": body.get("model", "judge"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
        }  # fmt: skip

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--delay", type=float, default=0.3)
    args = p.parse_args()
    server = JudgeServer(delay=args.delay, port=args.port)
    server.thread.join()


if __name__ == "__main__":
    main()
