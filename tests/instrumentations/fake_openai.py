"""A small OpenAI-compatible chat completions server on 127.0.0.1 for the real clients.

A real HTTP server (``http.server`` in a thread), so the instrumented ``openai`` client and
LangChain's ``ChatOpenAI`` make real requests. Its answers are a pure function of the request,
so each test knows what the model "did":

- a user message containing ``[500]`` gets an HTTP 500 (``openai.InternalServerError``);
- a request that offers tools and has no ``tool`` message yet asks for every offered tool
  named in :data:`TOOL_ARGUMENTS` (one ``tool_calls`` entry each, in the offered order);
- a user message containing ``[chain=K]`` gets a chain of K turns: each turn asks for the
  one tool ``step_<n>`` (``n`` = tool results so far, arguments ``{"n": n}``) until K tool
  results are in (the FM-1 agent: one tool per turn, so steps have depths); with
  ``[fail=2,3]`` too, the first request of turns 2 and 3 gets an HTTP 500 and its retry
  (the same request again) the normal answer — the one stateful rule, kept per server;
- anything else gets the text answer :data:`ANSWER`.

Usage is ``prompt_tokens = 10 * len(messages)``, ``completion_tokens = 5 * (calls + 1)``; the
response ``model`` is the request's with :data:`RESPONSE_SUFFIX` (request and response model
differ, as with OpenAI's dated snapshots).
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = "It is sunny in Paris; order 42 could not be looked up."
RESPONSE_SUFFIX = "-2024-07-18"
TOOL_ARGUMENTS = {"get_weather": {"city": "Paris"}, "lookup_order": {"order_id": "42"}}


def usage(messages: int, calls: int) -> dict[str, int]:
    prompt, completion = 10 * messages, 5 * (calls + 1)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


SERVER_ERROR = {"error": {"message": "upstream exploded", "type": "server_error", "code": None}}


def answer(
    request: dict[str, Any], serial: int, seen: set[str] | None = None
) -> tuple[int, dict[str, Any]]:
    """``(status, body)`` for one chat completions request (``seen``: the chain turns that
    already failed once, for ``[fail=...]``)."""
    messages = request.get("messages") or []
    texts = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
    if any("[500]" in t for t in texts):
        return 500, SERVER_ERROR
    fail = next((re.search(r"\[fail=([\d,]+)\]", t) for t in texts if "[fail=" in t), None)
    if fail is not None and seen is not None:
        turn = sum(1 for m in messages if m.get("role") == "tool")
        key = f"{texts[0]}#{turn}"
        if str(turn) in fail.group(1).split(",") and key not in seen:
            seen.add(key)
            return 500, SERVER_ERROR
    offered = [t["function"]["name"] for t in request.get("tools") or [] if "function" in t]
    calls = [name for name in offered if name in TOOL_ARGUMENTS]
    arguments = dict(TOOL_ARGUMENTS)
    if any(m.get("role") == "tool" for m in messages):
        calls = []
    chain = next((re.search(r"\[chain=(\d+)\]", t) for t in texts if "[chain=" in t), None)
    if chain is not None:
        done = sum(1 for m in messages if m.get("role") == "tool")
        calls = [f"step_{done}"] if done < int(chain.group(1)) else []
        arguments = {name: {"n": done} for name in calls}
    message: dict[str, Any] = {"role": "assistant", "content": None if calls else ANSWER}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{serial}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments[name])},
            }
            for i, name in enumerate(calls)
        ]
    body = {
        "id": f"chatcmpl-{serial}",
        "object": "chat.completion",
        "created": 1_700_000_000 + serial,
        "model": f"{request.get('model', 'gpt-4o-mini')}{RESPONSE_SUFFIX}",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": usage(len(messages), len(calls)),
        "system_fingerprint": "fp_fake",
    }
    return 200, body


class FakeOpenAI:
    """``with FakeOpenAI() as api: api.base_url`` (ends in ``/v1``); ``api.requests`` seen."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.failed_once: set[str] = set()
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                with fake._lock:
                    fake.requests.append(request)
                    serial = len(fake.requests)
                if self.path.rstrip("/").endswith("/chat/completions"):
                    with fake._lock:
                        status, body = answer(request, serial, fake.failed_once)
                else:
                    status, body = 404, {"error": {"message": f"no route {self.path}"}}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
