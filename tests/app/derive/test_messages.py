"""One LLM call's content, whichever convention carried it (no database)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

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


# Fuzz: message parsing must accept every shape a span or event can carry without raising
# (one TypeError stopped the derive job for every project). Keys are the ones the parsers
# read; values are any JSON, as decoded values or as JSON text.
_KEYS = [
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
    "gen_ai.response.finish_reasons", "output.value", "gen_ai.prompt", "gen_ai.completion",
    "telltale.tool_calls.requested", "otel.events", "gen_ai.tool.call.id", "gen_ai.tool.name",
    "gen_ai.tool.args", "llm.input_messages.0.message.role",
    "llm.input_messages.0.message.content",
    "llm.output_messages.1.message.contents.0.message_content.text",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
    "gen_ai.prompt.0.content", "gen_ai.completion.0.finish_reason",
    "gen_ai.completion.0.tool_calls.0.name",
]  # fmt: skip
_NAMES = [
    "role", "parts", "type", "content", "name", "id", "arguments", "message", "tool_calls",
    "function", "attributes", "body", "choices", "finish_reason", "logprobs", "logprob",
    "text", "response", "result", "gen_ai.input.messages", "gen_ai.output.messages",
]  # fmt: skip
_WORDS = ["text", "tool_call", "tool_call_response", "user", "assistant", "system",
          "gen_ai.choice", "gen_ai.user.message", "gen_ai.tool.message",
          "gen_ai.client.inference.operation.details"]  # fmt: skip
_scalars = (
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6)
    | st.sampled_from(_WORDS)
)  # fmt: skip
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(_NAMES) | st.text(max_size=4), inner, max_size=5)
    ),
    max_leaves=24,
)
_attribute = _json | _json.map(lambda v: json.dumps(v))


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.dictionaries(st.sampled_from(_KEYS), _attribute, max_size=6), st.lists(_json, max_size=3))
def test_any_message_shape_is_read_without_raising(attrs: dict[str, Any], events: Any) -> None:
    got = call_content(attrs, events)
    assert all(isinstance(name, str) for name in got.requested_tools)
    assert all(isinstance(t, str) for t in [*got.system, *got.user, *got.output])


def test_the_shapes_that_stopped_the_job_are_read() -> None:
    parts_int = call_content({"gen_ai.input.messages": '[{"role":"user","parts":5}]'}, [])
    assert parts_int.user == []
    no_name = call_content({"telltale.tool_calls.requested": [{"id": "c1"}, {"name": "a"}]}, [])
    assert no_name.requested_tools == ["a"]
    listed = [{"name": "gen_ai.user.message", "attributes": [1], "body": {"content": "hi"}}]
    assert call_content({"otel.events": listed}, []).user == ["hi"]
