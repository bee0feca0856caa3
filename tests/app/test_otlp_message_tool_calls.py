"""Requested tool calls and tool results read from each convention's messages."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.otlp.message_tool_calls import REQUESTED, RESULTS, add_tool_calls, outcome


def read(attrs: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    add_tool_calls(attrs)
    return attrs.get(REQUESTED, []), attrs.get(RESULTS, [])


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("Error: ConnectionError('down')\n Please fix your mistakes.", "error"),
        ("  ERROR 503 from upstream", "error"),
        ('{"error": "timeout"}', "error"),
        ({"error": {"code": 1}}, "error"),
        ('{"error": null, "value": 3}', "ok"),
        ("sunny in Paris", "ok"),
        ("The error rate is low", "ok"),  # "error" must lead the text
        ([{"type": "text", "text": "Error: no such order"}], "error"),
        (None, "ok"),
        ("{not json", "ok"),
    ],
)
def test_outcome_rule(content: Any, expected: str) -> None:
    assert outcome(content) == expected


def test_otel_genai_messages() -> None:
    out = [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "let me check"},
                {
                    "type": "tool_call",
                    "id": "c1",
                    "name": "get_weather",
                    "arguments": {"city": "Paris"},
                },
            ],
        }
    ]
    inp = [
        {
            "role": "tool",
            "parts": [
                {"type": "tool_call_response", "id": "c0", "response": "Error: boom"},
            ],
        }
    ]
    requested, results = read(
        {"gen_ai.output.messages": json.dumps(out), "gen_ai.input.messages": json.dumps(inp)}
    )
    assert requested == [{"id": "c1", "name": "get_weather", "arguments": '{"city":"Paris"}'}]
    assert results == [{"id": "c0", "outcome": "error"}]


def test_openinference_flattened_messages_in_index_order() -> None:
    p = "llm.output_messages.0.message.tool_calls"
    attrs: dict[str, Any] = {
        f"{p}.1.tool_call.function.name": "lookup_order",
        f"{p}.1.tool_call.id": "c2",
        f"{p}.0.tool_call.function.name": "get_weather",
        f"{p}.0.tool_call.function.arguments": '{"city": "Paris"}',
        f"{p}.0.tool_call.id": "c1",
        "llm.input_messages.3.message.role": "tool",
        "llm.input_messages.3.message.tool_call_id": "c0",
        "llm.input_messages.3.message.content": "fine",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Error: not a tool message",
    }
    requested, results = read(attrs)
    assert [(c["id"], c["name"]) for c in requested] == [
        ("c1", "get_weather"),
        ("c2", "lookup_order"),
    ]
    assert results == [{"id": "c0", "outcome": "ok"}]


def test_openllmetry_completion_and_prompt() -> None:
    requested, results = read(
        {
            "gen_ai.completion.0.tool_calls.0.name": "search",
            "gen_ai.completion.0.tool_calls.0.arguments": "{}",
            "gen_ai.completion.0.tool_calls.0.id": "t1",
            "gen_ai.prompt.2.role": "tool",
            "gen_ai.prompt.2.tool_call_id": "t0",
            "gen_ai.prompt.2.content": '{"error": "rate limited"}',
        }
    )
    assert requested == [{"id": "t1", "name": "search", "arguments": "{}"}]
    assert results == [{"id": "t0", "outcome": "error"}]


def test_openlit_calls_need_ids_offered_tools_are_no_calls() -> None:
    requested, _ = read(
        {
            "gen_ai.tool.name": "get_weather, lookup_order",
            "gen_ai.tool.call.id": "c1, c2",
            "gen_ai.tool.args": '{"city": "Paris, France"}, {"order_id": "42"}',
        }
    )
    assert [(c["id"], c["name"], json.loads(c["arguments"])) for c in requested] == [
        ("c1", "get_weather", {"city": "Paris, France"}),
        ("c2", "lookup_order", {"order_id": "42"}),
    ]
    assert read({"gen_ai.tool.name": "get_weather, lookup_order"}) == ([], [])
    assert read({"gen_ai.tool.name": "a, b", "gen_ai.tool.call.id": "c1"}) == ([], [])


@pytest.mark.parametrize(
    "attrs",
    [
        {"gen_ai.output.messages": "not json"},
        {"gen_ai.output.messages": json.dumps({"role": "assistant"})},
        {
            "gen_ai.output.messages": json.dumps(
                [{"parts": "x"}, 3, {"parts": [{"type": "tool_call"}]}]
            )
        },
        {"llm.output_messages.0.message.tool_calls.0.tool_call.function.name": 7},
        {
            "gen_ai.input.messages": json.dumps(
                [{"role": "tool", "parts": [{"type": "tool_call_response"}]}]
            )
        },
    ],
)
def test_malformed_messages_give_nothing(attrs: dict[str, Any]) -> None:
    assert read(attrs) == ([], [])
