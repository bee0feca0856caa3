"""The agent every plain-client script runs: a tool loop and a failing call, per trace.

Runs inside an instrumentation's own virtualenv (tests/instrumentations/envs.py), never in
Telltale's: only the ``openai`` client and the standard library are imported here.

Trace 1: the model asks for ``get_weather`` and ``lookup_order``; the agent runs them
itself (plain client instrumentations make no tool spans), ``lookup_order`` raises and its
tool message says ``Error: ...``; a second call gets the answer.
Trace 2: the call fails with HTTP 500 (no retries), and the error leaves the agent span.
Both traces are turns of one conversation, :data:`SESSION_ID`, of the end user
:data:`USER_ID`: each script names them as its library lets an application do
(tests/instrumentations/test_real_instrumentations.py says which attributes arrive).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

MODEL = "gpt-4o-mini"
SESSION_ID, USER_ID = "conv-support-1", "user-7"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {
                "type": "object",
                "properties": {arg: {"type": "string"}},
                "required": [arg],
            },
        },
    }
    for name, arg in (("get_weather", "city"), ("lookup_order", "order_id"))
]


def get_weather(city: str) -> str:
    return f"sunny in {city}"


def lookup_order(order_id: str) -> str:
    raise ConnectionError(f"order service unavailable for {order_id}")


def run_tool(name: str, arguments: str) -> str:
    tool = {"get_weather": get_weather, "lookup_order": lookup_order}[name]
    try:
        return tool(**json.loads(arguments))
    except Exception as exc:  # the tool's failure goes back to the model, as agents do
        return f"Error: {type(exc).__name__}: {exc}"


def tool_loop(client: Any, **request: Any) -> str:
    """``request``: more parameters of each model request (``user``, the end user's id)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": "Weather in Paris, and where is order 42?"},
    ]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, **request)
    reply = first.choices[0].message
    messages.append(reply.model_dump(exclude_none=True))
    for call in reply.tool_calls or []:
        result = run_tool(call.function.name, call.function.arguments)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    second = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, **request)
    return str(second.choices[0].message.content)


def failing_call(client: Any, **request: Any) -> None:
    client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Please fail [500]"}], **request
    )


def run(
    agent_span: Callable[[str], AbstractContextManager[Any]], client: Any, **request: Any
) -> None:
    """``agent_span(name)`` opens the library's agent span around each trace."""
    with agent_span("tool-loop"):
        tool_loop(client, **request)
    try:
        with agent_span("failing"):
            failing_call(client, **request)
    except Exception as exc:
        if type(exc).__name__ != "InternalServerError":
            raise
