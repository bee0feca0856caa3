"""What one LLM call said and was told, read from whichever convention carried it.

The same facts arrive under several names (compare :mod:`app.otlp.message_tool_calls`, which
reads the tool calls the same way). Read here, per convention, from a span's attributes or from
one of its GenAI events (an OTLP log record stored in ``span_events``, or an OTLP span
event kept under ``otel.events``):

- OTel GenAI (latest): ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON text on
  a span, decoded values on the ``gen_ai.client.inference.operation.details`` event),
  messages ``{role, parts: [{type: text, content}, {type: tool_call, name}, ...],
  finish_reason}``; ``gen_ai.system_instructions``; ``gen_ai.response.finish_reasons``;
- OTel GenAI (older events): ``gen_ai.system.message`` / ``gen_ai.user.message`` bodies
  ``{content}``, ``gen_ai.choice`` bodies ``{finish_reason, message: {content,
  tool_calls}, logprobs}``;
- OpenInference: ``llm.input_messages.N.message.{role,content}`` (or ``.contents.M.
  message_content.text``), ``llm.output_messages.N.message.content``, and the raw
  response JSON in ``output.value`` (``choices[0].finish_reason``, ``logprobs``);
- OpenLLMetry: ``gen_ai.prompt.N.{role,content}``, ``gen_ai.completion.N.{content,
  finish_reason}``;
- OpenLIT: ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` (span events, or
  attributes) with the text in ``gen_ai.prompt`` / ``gen_ai.completion``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from app.otlp.message_tool_calls import REQUESTED, add_tool_calls, event_tool_calls

_OI_MESSAGE = re.compile(
    r"^llm\.(input|output)_messages\.(\d{1,9})\.message\."
    r"(role|content|contents\.(\d{1,9})\.message_content\.text)$"
)
_LEGACY_MESSAGE = re.compile(
    r"^gen_ai\.(prompt|completion)\.(\d{1,9})\.(role|content|finish_reason)$"
)
_ROLE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


_FIELDS = ("system", "user", "output", "finish_reasons", "requested_tools", "logprobs", "tool")


@dataclass
class CallContent:
    """The content of one LLM call; empty lists where nothing was captured."""

    system: list[str] = field(default_factory=list)
    user: list[str] = field(default_factory=list)
    output: list[str] = field(default_factory=list)
    finish_reasons: list[str] = field(default_factory=list)
    requested_tools: list[str] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    # What tools answered, as the call's input carried it (role ``tool``); the trace page
    # shows it, no signal is derived from it.
    tool: list[str] = field(default_factory=list)

    def merge(self, other: CallContent) -> None:
        """Fill what this one lacks from ``other`` (a span and its events say the same)."""
        for name in _FIELDS:
            if not getattr(self, name):
                setattr(self, name, list(getattr(other, name)))


def _decoded(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # OpenAI content parts [{type: text, text}]
        texts = [p.get("text") or p.get("content") for p in value if isinstance(p, dict)]
        joined = "\n".join(t for t in texts if isinstance(t, str))
        return joined or None
    return None


def _read_messages(value: Any, out: CallContent, *, side: str) -> None:
    value = _decoded(value)
    for message in value if isinstance(value, list) else []:
        if not isinstance(message, dict):
            continue
        role = str(message.get("role") or ("assistant" if side == "output" else "user"))
        texts: list[str] = []
        parts = message.get("parts")
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict) and part.get("type") == "text":
                text = _text(part.get("content"))
                if text:
                    texts.append(text)
            elif isinstance(part, dict) and part.get("type") == "tool_call_response":
                answer = part.get("response", part.get("result"))
                # Straight to ``tool``, whatever the message's role: never into the user text
                # that input identity hashes.
                if answer is not None and side == "input":
                    out.tool.append(
                        answer if isinstance(answer, str) else orjson.dumps(answer).decode()
                    )
        text = _text(message.get("content"))
        if text and not parts:
            texts.append(text)
        _file(out, role, "\n".join(texts), side=side)
        if side == "output" and isinstance(message.get("finish_reason"), str):
            out.finish_reasons.append(message["finish_reason"])


def _file(out: CallContent, role: str, text: str, *, side: str) -> None:
    if not text:
        return
    if side == "output":
        out.output.append(text)
    elif role in ("system", "developer"):
        out.system.append(text)
    elif role == "user" or role == "human":
        out.user.append(text)
    elif role in ("tool", "ipython", "function"):
        out.tool.append(text)


def _finish_reasons(value: Any) -> list[str]:
    value = _decoded(value)
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _logprobs(value: Any) -> list[float]:
    """Token logprobs of an OpenAI ``logprobs`` object (``{content: [{logprob}]}``)."""
    if isinstance(value, dict):
        value = value.get("content")
    if not isinstance(value, list):
        return []
    out = [t.get("logprob") for t in value if isinstance(t, dict)]
    return [float(v) for v in out if isinstance(v, int | float) and not isinstance(v, bool)]


def _raw_response(value: Any, out: CallContent) -> None:
    """OpenInference's ``output.value``: the provider's response JSON."""
    response = _decoded(value)
    choices = response.get("choices") if isinstance(response, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return
    choice = choices[0]
    if isinstance(choice.get("finish_reason"), str):
        out.finish_reasons.append(choice["finish_reason"])
    out.logprobs.extend(_logprobs(choice.get("logprobs")))
    message = choice.get("message")
    if isinstance(message, dict) and not out.output:
        text = _text(message.get("content"))
        if text:
            out.output.append(text)


def _flat(attrs: dict[str, Any], out: CallContent) -> None:
    groups: dict[tuple[str, int], dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(("llm.input_messages.", "llm.output_messages.", "gen_ai.prompt.",
                               "gen_ai.completion.")):  # fmt: skip
            continue
        match = _OI_MESSAGE.match(key) or _LEGACY_MESSAGE.match(key)
        if match is None:
            continue
        side = "input" if match.group(1) in ("input", "prompt") else "output"
        fields = groups.setdefault((side, int(match.group(2))), {})
        name = match.group(3)
        if name.startswith("contents."):
            fields.setdefault("parts", {})[int(match.group(4))] = value
        else:
            fields[name] = value
    for (side, _), fields in sorted(groups.items()):
        parts = fields.get("parts", {})
        text = _text(fields.get("content")) or "\n".join(
            str(parts[i]) for i in sorted(parts) if isinstance(parts[i], str)
        )
        _file(out, str(fields.get("role") or ("assistant" if side == "output" else "user")),
              text, side=side)  # fmt: skip
        if side == "output" and isinstance(fields.get("finish_reason"), str):
            out.finish_reasons.append(fields["finish_reason"])


def from_attributes(attrs: dict[str, Any]) -> CallContent:
    """What a span's (or an operation-details event's) attributes say of the call."""
    out = CallContent()
    instructions = _decoded(attrs.get("gen_ai.system_instructions"))
    if isinstance(instructions, list):  # parts, no role: [{type: text, content}]
        text = _text([{"text": p.get("content")} for p in instructions if isinstance(p, dict)])
        if text:
            out.system.append(text)
    _read_messages(attrs.get("gen_ai.input.messages"), out, side="input")
    _read_messages(attrs.get("gen_ai.output.messages"), out, side="output")
    out.finish_reasons = _finish_reasons(attrs.get("gen_ai.response.finish_reasons")) or (
        out.finish_reasons
    )
    _flat(attrs, out)
    if "output.value" in attrs:
        _raw_response(attrs["output.value"], out)
    for key, target in (("gen_ai.prompt", out.user), ("gen_ai.completion", out.output)):
        if isinstance(attrs.get(key), str) and not target:
            target.append(attrs[key])
    requested = attrs.get(REQUESTED)
    if requested is None and "gen_ai.output.messages" in attrs:
        probe = {"gen_ai.output.messages": attrs["gen_ai.output.messages"]}
        add_tool_calls(probe)
        requested = probe.get(REQUESTED)
    out.requested_tools = tool_names(requested)
    return out


def tool_names(requested: Any) -> list[str]:
    """The names of requested tool calls; a call without a string name is no call.

    >>> tool_names([{"name": "get_weather"}, {"id": "c2"}, 5, {"name": 7}])
    ['get_weather']
    >>> tool_names("not a list")
    []
    """
    if not isinstance(requested, list):
        return []
    return [c["name"] for c in requested if isinstance(c, dict) and isinstance(c.get("name"), str)]


def from_event(name: str, attrs: dict[str, Any], body: Any) -> CallContent:
    """What one GenAI event of the span says (log record or span event)."""
    out = from_attributes(attrs or {})
    body = _decoded(body)
    role = _ROLE_EVENTS.get(name)
    if role is not None and isinstance(body, dict):
        _file(out, role, _text(body.get("content")) or "", side="input")
    elif name == "gen_ai.choice" and isinstance(body, dict):
        found = body.get("message")
        message: dict[str, Any] = found if isinstance(found, dict) else {}
        _file(out, "assistant", _text(message.get("content")) or "", side="output")
        if isinstance(body.get("finish_reason"), str):
            out.finish_reasons.append(body["finish_reason"])
        out.logprobs.extend(_logprobs(body.get("logprobs")))
    # The calls an event requested, read as the monitor windows read them (one reader).
    out.requested_tools = tool_names(event_tool_calls(name, attrs or {}, body).get(REQUESTED))
    return out


def call_content(attrs: dict[str, Any], events: list[dict[str, Any]]) -> CallContent:
    """One LLM call's content: its span's attributes, then its events (both kinds)."""
    out = from_attributes(attrs)
    told = CallContent()
    span_events = attrs.get("otel.events")
    for ev in [*(span_events if isinstance(span_events, list) else []), *events]:
        if not isinstance(ev, dict):
            continue
        name = str(ev.get("name") or "")
        if name.startswith("gen_ai."):
            given = ev.get("attributes")
            piece = from_event(name, given if isinstance(given, dict) else {}, ev.get("body"))
            if name in _ROLE_EVENTS or name == "gen_ai.choice":
                _append(told, piece)  # one event per message: they add up
            else:
                told.merge(piece)
    # Content on the span and in events (span_and_event capture) is said twice: the span's
    # wins, events fill what it lacks, so every capture mode gives one content.
    out.merge(told)
    return out


def _append(out: CallContent, piece: CallContent) -> None:
    for name in _FIELDS:
        getattr(out, name).extend(getattr(piece, name))
