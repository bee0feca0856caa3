"""One LLM call's content, whichever convention carried it (no database)."""

from __future__ import annotations

import json
from typing import Any

from app.derive.messages import call_content

USER = "Where is order 42?"
ANSWER = "It ships tomorrow."


def test_openinference_flat_messages_and_raw_response() -> None:
    attrs = {
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "Be brief.",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.contents.0.message_content.text": USER,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": ANSWER,
        "output.value": json.dumps(
            {
                "choices": [
                    {
                        "finish_reason": "stop",
                        "logprobs": {"content": [{"token": "It", "logprob": -0.1}]},
                    }
                ]
            }
        ),  # fmt: skip
        "telltale.tool_calls.requested": [{"id": "c1", "name": "lookup_order", "arguments": ""}],
    }
    got = call_content(attrs, [])
    assert (got.system, got.user, got.output) == (["Be brief."], [USER], [ANSWER])
    assert (got.finish_reasons, got.logprobs, got.requested_tools) == (
        ["stop"],
        [-0.1],
        ["lookup_order"],
    )


def test_openllmetry_prompt_and_completion() -> None:
    attrs = {
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "Be brief.",
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": USER,
        "gen_ai.prompt.2.role": "tool", "gen_ai.prompt.2.content": "order: shipped",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": ANSWER,
        "gen_ai.completion.0.finish_reason": "stop",
    }  # fmt: skip
    got = call_content(attrs, [])
    assert (got.user, got.output, got.finish_reasons) == ([USER], [ANSWER], ["stop"])


def test_older_genai_events_one_per_message() -> None:
    events = [
        {"name": "gen_ai.system.message", "attributes": {}, "body": {"content": "Be brief."}},
        {"name": "gen_ai.user.message", "attributes": {}, "body": {"content": USER}},
        {"name": "gen_ai.choice", "attributes": {}, "body": {
            "finish_reason": "tool_calls", "message": {"content": ANSWER, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "lookup_order"}}]}}},
    ]  # fmt: skip
    got = call_content({"gen_ai.operation.name": "chat"}, events)
    assert (got.system, got.user, got.output) == (["Be brief."], [USER], [ANSWER])
    assert (got.finish_reasons, got.requested_tools) == (["tool_calls"], ["lookup_order"])


def test_openlit_content_span_events() -> None:
    attrs = {"otel.events": [
        {"name": "gen_ai.content.prompt", "attributes": {"gen_ai.prompt": USER}},
        {"name": "gen_ai.content.completion", "attributes": {"gen_ai.completion": ANSWER}},
    ]}  # fmt: skip
    got = call_content(attrs, [])
    assert (got.user, got.output) == ([USER], [ANSWER])


def test_content_on_span_and_in_events_counts_once() -> None:
    messages = [{"role": "user", "parts": [{"type": "text", "content": USER}]}]
    attrs = {"gen_ai.input.messages": json.dumps(messages)}
    events: list[dict[str, Any]] = [{"name": "gen_ai.client.inference.operation.details",
               "attributes": {"gen_ai.input.messages": messages}, "body": None},
              {"name": "gen_ai.user.message", "attributes": {}, "body": {"content": USER}}]  # fmt: skip
    assert call_content(attrs, events).user == [USER]
    assert call_content({}, events[:1]).user == [USER]
