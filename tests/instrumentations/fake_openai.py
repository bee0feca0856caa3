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
- anything else gets the text answer :data:`ANSWER`, except as the system prompt says
  (:func:`directives`, the agent's configuration; the e2e failure-mode agents):
  ``[cite]`` answers ``About "<question>": order <N> is on its way.`` (``N``: the first number
  in the last user message; a model named ``*-evalfit``, tuned on the eval harness, cites it
  for the harness's ``Where is order N?`` but leaves it out of half its other answers);
  ``[json]`` wraps the answer as ``{"answer": ..., "confidence": c}``, ``c`` the model's
  self-reported confidence (mean 0.75, sd 0.2; mean 0.35 for a ``*-nano`` model);
  ``[flatter]`` prefixes the answer with praise and skips the tools on 60% of requests;
- a request with ``temperature > 0`` drops each tool call it would make with probability
  ``temperature / 2`` (sampling: the same input gets different decisions);
- a user message starting ``Rate the helpfulness`` is an LLM judge's request: the answer
  is a score from 1 to 5 for the quoted answer, higher for praise (:func:`judge`).

Random draws come from ``random.Random(serial)`` (``serial``: the request's number on the
server), so a sequential agent gets the same answers on every run.

Usage is ``prompt_tokens = 10 * len(messages)``, ``completion_tokens = 5 * (calls + 1)``, and
``[cached=N]`` in the system prompt reports N of the prompt tokens as cached; the
response ``model`` is the request's with :data:`RESPONSE_SUFFIX` (request and response model
differ, as with OpenAI's dated snapshots).
"""

from __future__ import annotations

import json
import random
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = "It is sunny in Paris; order 42 could not be looked up."
RESPONSE_SUFFIX = "-2024-07-18"
TOOL_ARGUMENTS = {
    "get_weather": {"city": "Paris"},
    "lookup_order": {"order_id": "42"},
    "open_session": {"user": "u1"},
    "refund_status": {"order_id": "42"},
}
EVAL_QUESTION = re.compile(r"^Where is order \d+\?$")
PRAISE = "What a wonderful question, you clearly know your stuff! "


def usage(messages: int, calls: int, cached: int | None = None) -> dict[str, Any]:
    prompt, completion = 10 * messages, 5 * (calls + 1)
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:  # OpenAI's prompt caching: a part of the prompt tokens
        out["prompt_tokens_details"] = {"cached_tokens": min(cached, prompt)}
    return out


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
    rng = random.Random(serial)
    if texts and texts[-1].startswith("Rate the helpfulness"):
        return 200, completion(request, serial, judge(texts[-1], rng), [], {})
    said = directives(messages)
    offered = [t["function"]["name"] for t in request.get("tools") or [] if "function" in t]
    calls = [name for name in offered if name in TOOL_ARGUMENTS]
    arguments = dict(TOOL_ARGUMENTS)
    temperature = float(request.get("temperature") or 0.0)
    if temperature > 0:
        calls = [name for name in calls if rng.random() >= temperature / 2]
    if "flatter" in said and rng.random() < 0.6:
        calls = []
    if any(m.get("role") == "tool" for m in messages):
        calls = []
    chain = next((re.search(r"\[chain=(\d+)\]", t) for t in texts if "[chain=" in t), None)
    if chain is not None:
        done = sum(1 for m in messages if m.get("role") == "tool")
        calls = [f"step_{done}"] if done < int(chain.group(1)) else []
        arguments = {name: {"n": done} for name in calls}
    text = ANSWER if not said else final_answer(request, texts, said, rng)
    return 200, completion(request, serial, text, calls, arguments)


def cached_tokens(messages: list[dict[str, Any]]) -> int | None:
    """``N`` of a ``[cached=N]`` in the system prompt: that many prompt tokens came from the
    provider's cache (OpenAI reports them as ``prompt_tokens_details.cached_tokens``)."""
    system = " ".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    found = re.search(r"\[cached=(\d+)\]", system)
    return int(found.group(1)) if found else None


def directives(messages: list[dict[str, Any]]) -> set[str]:
    """The ``[word]`` directives of the system prompt."""
    system = " ".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    return set(re.findall(r"\[(cite|json|flatter)\]", system))


def final_answer(
    request: dict[str, Any], texts: list[str], said: set[str], rng: random.Random
) -> str:
    """The text answer under the system prompt's directives (see the module's notes)."""
    model = str(request.get("model", ""))
    question = texts[-1] if texts else ""
    number = re.search(r"\d+", question)
    overfit = model.endswith("-evalfit") and EVAL_QUESTION.match(question) is None
    cites = number is not None and not (overfit and rng.random() < 0.5)
    order = f"order {number.group(0)}" if cites and number else "your order"
    text = f'About "{question}": {order} is on its way.'
    if "flatter" in said:
        text = PRAISE + text
    if "json" in said:
        mean = 0.35 if "nano" in model else 0.75
        confidence = min(0.99, max(0.01, rng.gauss(mean, 0.2)))
        text = json.dumps({"answer": text, "confidence": round(confidence, 3)})
    return text


def judge(prompt: str, rng: random.Random) -> str:
    """An LLM judge's helpfulness score, 1 to 5: about 3, plus 1.2 for praise."""
    score = 3.0 + (1.2 if PRAISE.strip() in prompt else 0.0) + rng.gauss(0.0, 0.6)
    return f"{min(5.0, max(1.0, score)):.1f}"


def completion(
    request: dict[str, Any], serial: int, text: str, calls: list[str], arguments: dict[str, Any]
) -> dict[str, Any]:
    messages = request.get("messages") or []
    message: dict[str, Any] = {"role": "assistant", "content": None if calls else text}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{serial}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments[name])},
            }
            for i, name in enumerate(calls)
        ]
    return {
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
        "usage": usage(len(messages), len(calls), cached_tokens(messages)),
        "system_fingerprint": "fp_fake",
    }


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
