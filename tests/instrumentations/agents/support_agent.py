"""A support agent on the plain ``openai`` client under OpenTelemetry's ``openai-v2``.

The e2e failure-mode tests' agent for FM-2, FM-4, FM-5 and FM-6: the SDK set up from the
standard OTEL_* variables (content capture on, ``span_only``), one ``invoke_agent`` span
per trace, the application's own code otherwise. Each trace: the model is offered three
tools and asks for all of them (``open_session``, ``lookup_order``, ``refund_status``); the
agent runs them in that order and sends their results (``Error: ...`` for a failed one)
back; the second call's answer must name the order (``[cite]``), else the agent raises
``AnswerError`` and the trace fails. Per trace, seeded by ``AGENT_SEED``:

- ``AGENT_TOOL_P`` (default 0.08): each tool fails on its own with this probability
  (``open_session``: ``AGENT_SESSION_P``, default the same); ``AGENT_CASCADE=1``: when
  ``open_session`` fails, the tools after it need the session and fail with
  ``AGENT_CASCADE_P`` (FM-2's injected cascade);
- ``AGENT_QUESTIONS``: ``orders`` (varied customers' wording), ``eval`` (the eval harness's
  ``Where is order N?``) or ``billing`` (a new topic in new wording: FM-6's drift);
- ``AGENT_MODEL`` (default ``gpt-4o-mini``); ``AGENT_JSON=1`` asks for the self-reported
  confidence (``[json]``, FM-4);
- ``OUTCOMES_FILE``: one JSON line per trace, ``{"otel_trace_id", "at", "confidence", "ok",
  "resolved"}``: what the ticket system learns later (``resolved`` is drawn with the
  answer's confidence, or 0.8 without one); the tests post it as delayed labels.

Prints ``tool failures: T traces failed: F``.
"""

from __future__ import annotations

import json
import os
import random
from typing import Any

import openai
import simclock
from opentelemetry import trace
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from otlp_setup import setup, shutdown

provider = setup()
OpenAIInstrumentor().instrument()
tracer = trace.get_tracer("support-app")
client = openai.OpenAI(max_retries=0)

N = int(os.environ["AGENT_TRACES"])
SEED = int(os.environ.get("AGENT_SEED", "0"))
TOOL_P = float(os.environ.get("AGENT_TOOL_P", "0.08"))
SESSION_P = float(os.environ.get("AGENT_SESSION_P", TOOL_P))
CASCADE = os.environ.get("AGENT_CASCADE") == "1"
CASCADE_P = float(os.environ.get("AGENT_CASCADE_P", "0.85"))
QUESTIONS = os.environ.get("AGENT_QUESTIONS", "orders")
MODEL = os.environ.get("AGENT_MODEL", "gpt-4o-mini")
SYSTEM = "You are a support agent. [cite]" + (" [json]" if os.environ.get("AGENT_JSON") else "")
TOOL_NAMES = ("open_session", "lookup_order", "refund_status")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {"type": "object", "properties": {"arg": {"type": "string"}}},
        },
    }
    for name in TOOL_NAMES
]
ORDERS = (
    "Hi, my parcel {n} still hasn't shown up, can you check?",
    "order {n} was supposed to arrive yesterday. where is it",
    "Could you tell me the delivery status of order number {n}?",
    "I ordered shoes last week (order {n}) and the tracking is stuck.",
    "When will my order {n} be delivered to my flat?",
)
BILLING = (
    "Why was my credit card charged twice for invoice {n}?",
    "I want a refund of the subscription fee on invoice {n} right now.",
    "My bank statement shows an unknown Telltale payment, reference {n}.",
    "Please cancel the annual plan and refund invoice {n} to my PayPal.",
    "The VAT on invoice {n} is wrong for a business in Germany.",
)
rng = random.Random(SEED)


class AnswerError(Exception):
    """The answer does not name the order: the agent's own check fails the request."""


def question() -> str:
    n = rng.randint(1000, 9999)
    if QUESTIONS == "eval":
        return f"Where is order {n}?"
    return rng.choice(BILLING if QUESTIONS == "billing" else ORDERS).format(n=n)


def run_tools(calls: Any, failing: set[str]) -> list[dict[str, Any]]:
    out = []
    for call in calls:
        name = call.function.name
        if name in failing:
            result = f"Error: ConnectionError: {name} backend unavailable"
        else:
            result = f"{name}: ok"
        out.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return out


def failing_tools() -> set[str]:
    failed: set[str] = set()
    for name in TOOL_NAMES:
        p = SESSION_P if name == "open_session" else TOOL_P
        if CASCADE and "open_session" in failed:
            p = CASCADE_P
        if rng.random() < p:
            failed.add(name)
    return failed


def one_trace(text: str, failing: set[str]) -> tuple[str, float | None]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": text},
    ]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    reply = first.choices[0].message
    messages.append(reply.model_dump(exclude_none=True))
    messages += run_tools(reply.tool_calls or [], failing)
    second = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    content = str(second.choices[0].message.content)
    confidence = None
    if content.startswith("{"):
        parsed = json.loads(content)
        content, confidence = parsed["answer"], float(parsed["confidence"])
    if not any(ch.isdigit() for ch in content.split(":", 1)[-1]):
        raise AnswerError("the answer does not name the order")
    return content, confidence


attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support-agent"}
counts = {"tool": 0, "failed": 0}
outcomes = []
for i in range(N):
    simclock.trace(i)
    text, failing = question(), failing_tools()
    counts["tool"] += len(failing)
    ok, confidence = True, None
    with tracer.start_as_current_span("invoke_agent support-agent", attributes=attributes) as span:
        trace_id = format(span.get_span_context().trace_id, "032x")
        try:
            _, confidence = one_trace(text, failing)
        except AnswerError as exc:
            ok = False
            span.record_exception(exc)
            span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)))
    counts["failed"] += not ok
    p_resolved = confidence if confidence is not None else 0.8
    resolved = ok and rng.random() < p_resolved
    outcomes.append(
        {
            "otel_trace_id": trace_id,
            "at": simclock.now_ns() / 1e9,
            "confidence": confidence,
            "ok": ok,
            "resolved": resolved,
        }
    )
    if i % 20 == 19:
        provider.force_flush()
if os.environ.get("OUTCOMES_FILE"):
    with open(os.environ["OUTCOMES_FILE"], "w") as f:
        f.writelines(json.dumps(o) + "\n" for o in outcomes)
print(f"tool failures: {counts['tool']} traces failed: {counts['failed']}")
shutdown()
