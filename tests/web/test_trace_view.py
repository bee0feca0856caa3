"""The trace page's conversation of a long agent run: each LLM call repeats the
conversation so far, and only what it adds is read; the chat is the same as reading every
call in full."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from app.derive import conversation as chat_reading
from app.web import trace_view
from bench.ui import big_trace


def spans_of(events: list[dict]) -> list[dict]:
    out = []
    for e in events:
        if e["type"] == "span":
            body = dict(e["body"])
            body.setdefault("status", "ok")
            out.append(body)
    return out


def full_reads(spans: list[dict]) -> list[trace_view.ChatMessage]:
    """The conversation with the shortcut off: every call read in full."""
    original = chat_reading._repeats
    chat_reading._repeats = lambda *_: None  # type: ignore[assignment]
    try:
        return trace_view.conversation(spans, {})
    finally:
        chat_reading._repeats = original  # type: ignore[assignment]


def key(chat: list[trace_view.ChatMessage]) -> list[tuple]:
    return [
        (m.role, m.text, m.span_id, tuple(sorted(str(c.items()) for c in m.calls))) for m in chat
    ]


def test_a_long_run_reads_each_call_once_and_shows_the_same_chat() -> None:
    spans = spans_of(big_trace(datetime(2026, 12, 1, tzinfo=UTC)))[:120]
    fast = trace_view.conversation(spans, {})
    assert key(fast) == key(full_reads(spans))
    roles = [m.role for m in fast]
    assert (
        roles[0] == "user" and roles.count("assistant") == 60 and roles.count("tool") == 60
    )  # a tool span, not repeated as input
    assert sum(m.text == "Rebook me" for m in fast) == 1  # the repeated question shows once


@pytest.mark.parametrize(
    "change",
    ["edited_history", "new_system", "identical_input", "flat_convention"],
)
def test_calls_that_do_not_extend_the_last_input_are_read_in_full(change: str) -> None:
    t0 = datetime(2026, 12, 1, tzinfo=UTC)

    def llm(k: int, messages: list[dict], **extra: str) -> dict:
        return {"span_id": f"l{k}", "kind": "llm", "status": "ok",
                "started_at": t0 + timedelta(seconds=k),
                "attributes": {"gen_ai.input.messages": json.dumps(messages),
                               "gen_ai.output.messages": json.dumps(
                                   [{"role": "assistant", "parts": [
                                       {"type": "text", "content": f"answer {k}"}]}]),
                               **extra}}  # fmt: skip

    def user(text: str) -> dict:
        return {"role": "user", "parts": [{"type": "text", "content": text}]}

    first = [user("hello"), user("ok")]
    second = {
        "edited_history": [user("hello, edited"), user("ok"), user("ok")],
        "new_system": [*first, user("ok")],
        "identical_input": first,
        "flat_convention": [*first, user("more")],
    }[change]
    extra = {
        "new_system": {"gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be brief"}])},
        "flat_convention": {"llm.input_messages.0.message.role": "user",
                            "llm.input_messages.0.message.content": "hello"},
    }.get(change, {})  # fmt: skip
    spans = [llm(0, first), llm(1, second, **extra)]
    assert key(trace_view.conversation(spans, {})) == key(full_reads(spans))


def test_long_attribute_values_are_cut_with_a_note() -> None:
    dump = trace_view.attribute_dump({"big": "x" * 5000, "small": "y", "n": 3})
    data = json.loads(dump)
    assert data["big"].startswith("x" * 600) and data["big"].endswith("[4,400 more characters]")
    assert data["small"] == "y" and data["n"] == 3
