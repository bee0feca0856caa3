"""The conversation an agent had, read from a trace's spans and GenAI events: each LLM
call's new system, user and tool messages, its answer and the tool calls it requested, and
each tool span's turn. The trace page shows it (:mod:`app.web.trace_view`); online
evaluators put it in a judge's prompt (:mod:`app.evaluators.content`), so a judge reads
what a person reads.

Nothing here parses a convention: an LLM span's messages come from
:func:`app.derive.messages.call_content`, the calls it requested from the span's
``telltale.tool_calls.requested`` (written by the OTLP receiver) or its events.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from app.derive.messages import call_content
from app.otlp.message_tool_calls import REQUESTED, RESULTS, event_tool_calls

# A tool span's arguments and result, under the names the conventions give them.
TOOL_INPUT = ("gen_ai.tool.call.arguments", "input.value", "traceloop.entity.input")
TOOL_OUTPUT = ("gen_ai.tool.call.result", "output.value", "traceloop.entity.output")
INPUT, SYSTEM = "gen_ai.input.messages", "gen_ai.system_instructions"
OTHER_INPUTS = ("llm.input_messages", "gen_ai.prompt")  # other conventions' input messages
FOLD_AT = 600  # characters shown before the rest folds behind "show all"


@dataclass
class ChatMessage:
    role: str  # system | user | assistant | tool
    text: str
    span_id: str
    name: str = ""  # the model of an assistant turn, the tool of a tool turn
    calls: list[dict[str, Any]] = field(default_factory=list)  # requested: name, arguments
    status: str = "ok"
    error: str | None = None

    @property
    def short(self) -> str:
        return self.text[:FOLD_AT]

    @property
    def rest(self) -> str:
        return self.text[FOLD_AT:]

    @property
    def folds(self) -> bool:
        return len(self.text) > FOLD_AT


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _requested(
    attrs: dict[str, Any], events: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The calls a span requested and the results its input carried: its attributes,
    else what its GenAI events say (``event_only`` capture)."""
    requested, results = _dicts(attrs.get(REQUESTED)), _dicts(attrs.get(RESULTS))
    for ev in events if not requested or not results else ():
        found = event_tool_calls(
            str(ev.get("name") or ""), ev.get("attributes") or {}, ev.get("body")
        )
        requested = requested or _dicts(found.get(REQUESTED))
        results = results or _dicts(found.get(RESULTS))
    return requested, results


def conversation(
    spans: list[dict[str, Any]], events: dict[str, list[dict[str, Any]]]
) -> list[ChatMessage]:
    """The chat in step order: each LLM call's new system/user/tool messages, then its answer
    with the tool calls it requested; a tool span as the tool's turn. Each call's input
    repeats the history before it, so a message already shown is not shown again."""
    # How often each (role, text) was shown: a call's input shows only what goes beyond it
    # (two tools may both answer "ok" in one call; the next call repeats both).
    shown: Counter[tuple[str, str]] = Counter()
    outcomes: dict[str, str] = {}
    chat: list[ChatMessage] = []
    for s in spans:
        _, results = _requested(s.get("attributes") or {}, events.get(s["span_id"], []))
        for r in results:
            if isinstance(r.get("id"), str):
                outcomes[r["id"]] = str(r.get("outcome") or "")

    def add(msg: ChatMessage, this_call: Counter[tuple[str, str]]) -> None:
        key = (msg.role, msg.text)
        this_call[key] += 1
        if msg.text and this_call[key] > shown[key]:
            shown[key] = this_call[key]
            chat.append(msg)

    before: tuple[Any, Any, Counter[tuple[str, str]]] = (None, None, Counter())
    for s in spans:
        attrs = dict(s.get("attributes") or {})
        sid = s["span_id"]
        if s.get("kind") == "llm":
            suffix = _repeats(before, attrs) if not events.get(sid) else None
            if suffix is None:
                content = call_content(attrs, events.get(sid, []))
                this_call: Counter[tuple[str, str]] = Counter()
            else:  # only what this call adds to the previous call's input is read
                attrs_new = {k: v for k, v in attrs.items() if k != SYSTEM}
                content = call_content({**attrs_new, INPUT: suffix}, [])
                this_call = before[2].copy()
            for text in content.system:
                add(ChatMessage("system", text, sid), this_call)
            for text in content.user:
                add(ChatMessage("user", text, sid), this_call)
            for text in content.tool:
                add(ChatMessage("tool", text, sid), this_call)
            before = (attrs.get(INPUT), attrs.get(SYSTEM), this_call.copy())
            requested, _ = _requested(attrs, events.get(sid, []))
            calls = [
                {
                    "id": c.get("id"),
                    "name": _text(c.get("name")),
                    "arguments": _text(c.get("arguments")),
                    "outcome": outcomes.get(str(c.get("id")), "no result seen"),
                }
                for c in requested
            ]
            answer = "\n".join(content.output)
            if answer or calls:
                chat.append(
                    ChatMessage(
                        "assistant",
                        answer,
                        sid,
                        name=s.get("response_model") or s.get("request_model") or "",
                        calls=calls,
                        status=s.get("status") or "ok",
                        error=s.get("error_type"),
                    )  # fmt: skip
                )
        elif s.get("kind") == "tool":
            arguments = next((_text(attrs[k]) for k in TOOL_INPUT if attrs.get(k)), "")
            result = next((_text(attrs[k]) for k in TOOL_OUTPUT if attrs.get(k)), "")
            text = result or ("(no result captured)" if s.get("status") != "error" else "")
            chat.append(
                ChatMessage(
                    "tool",
                    text,
                    sid,
                    name=s.get("tool_name") or s.get("name") or "",
                    calls=[{"arguments": arguments}] if arguments else [],
                    status=s.get("status") or "ok",
                    error=s.get("error_type"),
                )  # fmt: skip
            )
            if result:  # the next call's input repeats it as a tool message: shown already
                shown[("tool", result)] += 1
    return chat


def _repeats(
    before: tuple[Any, Any, Counter[tuple[str, str]]], attrs: dict[str, Any]
) -> str | None:
    """What an LLM call's ``gen_ai.input.messages`` adds to the previous call's, as a JSON
    array, when it repeats that call's array as its prefix under the same system
    instructions and nothing else describes its input; None otherwise.

    Instrumentations send the whole conversation with every call, so reading each call's
    input in full costs the square of the trace's length (2 s for a 500-span trace); the
    previous call's counts of what it showed stand in for the prefix.
    """
    prev, system, _ = before
    cur = attrs.get(INPUT)
    if not (isinstance(prev, str) and isinstance(cur, str)) or attrs.get(SYSTEM) != system:
        return None
    if any(k.startswith(OTHER_INPUTS) for k in attrs):
        return None
    head = prev.rstrip()
    if not head.endswith("]") or not cur.startswith(head[:-1]):
        return None
    rest = cur[len(head) - 1 :].lstrip()
    if rest.startswith(","):
        return "[" + rest[1:]
    return "[]" if rest == "]" else None
