"""Tool calls an LLM span *requested* and tool results its input carried, from its messages.

Plain client instrumentations (OTel ``openai-v2``, OpenInference ``openai``, OpenLIT) emit
no tool spans: the calls the model asked for exist only in the LLM span's output messages,
and what the tool answered only in the next call's input messages. Read here, per
convention:

- OTel GenAI: ``gen_ai.output.messages`` / ``gen_ai.input.messages`` (JSON), parts of type
  ``tool_call`` (``id``, ``name``, ``arguments``) and ``tool_call_response`` (``id``,
  ``response`` or ``result``);
- OpenInference: ``llm.output_messages.N.message.tool_calls.M.tool_call.{id,function.name,
  function.arguments}``; results are ``llm.input_messages.N.message`` with role ``tool``,
  ``tool_call_id`` and ``content``;
- OpenLLMetry / OpenLIT: ``gen_ai.completion.N.tool_calls.M.{id,name,arguments}``; results
  ``gen_ai.prompt.N`` with role ``tool``, ``tool_call_id`` and ``content``;
- OpenLIT 1.45 on the LLM span: ``gen_ai.tool.call.id`` ("call_1, call_2"), ``gen_ai.tool.name``
  and ``gen_ai.tool.args`` joined by ", " in the same order. Only with call ids: a
  ``gen_ai.tool.name`` alone lists the tools *offered*, which are no calls.

With content captured as events (OTel ``event_only``), the same messages arrive on
``/v1/logs``: ``gen_ai.client.inference.operation.details`` carries
``gen_ai.input.messages`` / ``gen_ai.output.messages`` (attributes, or a body map), the
older per-message events ``gen_ai.choice`` (body ``message.tool_calls``) and
``gen_ai.tool.message`` (body ``id`` and ``content``). :func:`event_tool_calls` reads them
and the event row keeps the two lists; the monitor windows join them onto the span.

The span keeps them as ``telltale.tool_calls.requested`` (``[{id, name, arguments}]``) and
``telltale.tool_calls.results`` (``[{id, outcome}]``); the detectors turn requested calls
into tool steps when a trace has no tool spans (``detectors.requested_tools``).

A tool result's **outcome** is ``error`` when its text, stripped, starts with ``error``
(any case: LangChain's ``Error: ...``, the usual ``ERROR ...``), or it is a JSON object with
a non-empty top-level ``error`` key; otherwise ``ok``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from app.traces.span_events import REQUESTED, RESULTS

MAX_CALLS = 64
_ARGUMENTS_LIMIT = 2000
_OI_CALL = re.compile(
    r"^llm\.output_messages\.(\d{1,9})\.message\.tool_calls\.(\d{1,9})\.tool_call\."
    r"(id|function\.name|function\.arguments)$"
)
_OI_INPUT = re.compile(r"^llm\.input_messages\.(\d{1,9})\.message\.(role|tool_call_id|content)$")
_LEGACY_CALL = re.compile(
    r"^gen_ai\.completion\.(\d{1,9})\.tool_calls\.(\d{1,9})\.(id|name|arguments)$"
)
_LEGACY_INPUT = re.compile(r"^gen_ai\.prompt\.(\d{1,9})\.(role|tool_call_id|content)$")
_EVENT_MESSAGE_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages")
_FIELD = {"function.name": "name", "function.arguments": "arguments"}
FLAT_PREFIXES = (
    "llm.output_messages.",
    "llm.input_messages.",
    "gen_ai.completion.",
    "gen_ai.prompt.",
)


def outcome(content: Any) -> str:
    """``error`` or ``ok`` for one tool result (the rule in the module docstring).

    >>> outcome("Error: ConnectionError('down')"), outcome('{"error": "timeout"}'), outcome("sunny")
    ('error', 'error', 'ok')
    """
    if isinstance(content, str):
        text = content.strip()
        if text[:5].lower() == "error":
            return "error"
        if text.startswith("{"):
            try:
                content = orjson.loads(text)
            except orjson.JSONDecodeError:
                return "ok"
    if isinstance(content, dict) and content.get("error"):
        return "error"
    if isinstance(content, list) and content and all(isinstance(p, dict) for p in content):
        texts = [p.get("text") or p.get("content") for p in content]
        return outcome(" ".join(str(t) for t in texts if t))
    return "ok"


def add_tool_calls(attrs: dict[str, Any], *, flat: list[str] | None = None) -> None:
    """Write the two lists onto an LLM span's attributes when it carries any.

    ``flat``: keys of ``attrs`` that include every one starting with :data:`FLAT_PREFIXES`
    (others are ignored), when the caller has found them already; else they are looked up.
    """
    if flat is None:
        flat = [k for k in attrs if k.startswith(FLAT_PREFIXES)]
    # Membership tests first: this runs for every LLM span, and most carry no messages.
    output, given = attrs.get("gen_ai.output.messages"), attrs.get("gen_ai.input.messages")
    requested = (
        (_otel_calls(output) if output is not None else [])
        or (_flat_calls(attrs, flat) if flat else [])
        or (_openlit_calls(attrs) if "gen_ai.tool.call.id" in attrs else [])
    )
    results = (_otel_results(given) if given is not None else []) or (
        _flat_results(attrs, flat) if flat else []
    )
    if requested:
        attrs[REQUESTED] = requested[:MAX_CALLS]
    if results:
        attrs[RESULTS] = results[:MAX_CALLS]


def event_tool_calls(name: str, attributes: dict[str, Any], body: Any) -> dict[str, Any]:
    """The requested calls and tool results one GenAI event carries (possibly none).

    >>> body = {"message": {"tool_calls": [{"id": "c1", "function": {"name": "get_weather"}}]}}
    >>> event_tool_calls("gen_ai.choice", {}, body)[REQUESTED][0]["name"]
    'get_weather'
    >>> event_tool_calls("gen_ai.tool.message", {}, {"id": "c1", "content": "Error: down"})
    {'telltale.tool_calls.results': [{'id': 'c1', 'outcome': 'error'}]}
    """
    probe = {k: attributes[k] for k in _EVENT_MESSAGE_KEYS if k in attributes}
    if isinstance(body, dict):
        for key in _EVENT_MESSAGE_KEYS:
            probe.setdefault(key, body.get(key))
    out: dict[str, Any] = {}
    requested = _otel_calls(probe.get("gen_ai.output.messages"))
    results = _otel_results(probe.get("gen_ai.input.messages"))
    if isinstance(body, dict) and name == "gen_ai.choice":
        message = body.get("message")
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                made = _call(call.get("id"), function.get("name"), function.get("arguments"))
                requested += [made] if made is not None else []
    if isinstance(body, dict) and name == "gen_ai.tool.message" and body.get("id") is not None:
        results.append({"id": str(body["id"])[:128], "outcome": outcome(body.get("content"))})
    if requested:
        out[REQUESTED] = requested[:MAX_CALLS]
    if results:
        out[RESULTS] = results[:MAX_CALLS]
    return out


def _messages(value: Any) -> list[Any]:
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return []
    return value if isinstance(value, list) else []


def _parts(value: Any) -> list[dict[str, Any]]:
    out: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for message in _messages(value):
        if isinstance(message, dict) and isinstance(message.get("parts"), list):
            out.extend((message, p) for p in message["parts"] if isinstance(p, dict))
    return [{"role": m.get("role"), **p} for m, p in out]


def _arguments(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return text[:_ARGUMENTS_LIMIT]


def _call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any] | None:
    if not isinstance(name, str) or not name:
        return None
    return {
        "id": None if call_id is None else str(call_id)[:128],
        "name": name[:128],
        "arguments": _arguments(arguments if arguments is not None else ""),
    }


def _otel_calls(value: Any) -> list[dict[str, Any]]:
    calls = [
        _call(p.get("id"), p.get("name"), p.get("arguments"))
        for p in _parts(value)
        if p.get("type") == "tool_call"
    ]
    return [c for c in calls if c is not None]


def _otel_results(value: Any) -> list[dict[str, Any]]:
    return [
        {"id": str(p.get("id"))[:128], "outcome": outcome(p.get("response", p.get("result")))}
        for p in _parts(value)
        if p.get("type") == "tool_call_response" and p.get("id") is not None
    ]


def _grouped(
    attrs: dict[str, Any], keys: list[str], pattern: re.Pattern[str]
) -> dict[tuple[int, ...], dict[str, Any]]:
    groups: dict[tuple[int, ...], dict[str, Any]] = {}
    for key in keys:
        match = pattern.match(key)
        if match is not None:
            *index, name = match.groups()
            groups.setdefault(tuple(int(i) for i in index), {})[_FIELD.get(name, name)] = attrs[key]
    return dict(sorted(groups.items()))


def _flat_calls(attrs: dict[str, Any], keys: list[str]) -> list[dict[str, Any]]:
    out = []
    for pattern in (_OI_CALL, _LEGACY_CALL):
        for fields in _grouped(attrs, keys, pattern).values():
            call = _call(fields.get("id"), fields.get("name"), fields.get("arguments"))
            if call is not None:
                out.append(call)
        if out:
            break
    return out


def _flat_results(attrs: dict[str, Any], keys: list[str]) -> list[dict[str, Any]]:
    out = []
    for pattern in (_OI_INPUT, _LEGACY_INPUT):
        for fields in _grouped(attrs, keys, pattern).values():
            if fields.get("role") == "tool" and fields.get("tool_call_id") is not None:
                result_id = str(fields["tool_call_id"])[:128]
                out.append({"id": result_id, "outcome": outcome(fields.get("content"))})
        if out:
            break
    return out


def _openlit_calls(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    ids, names = attrs.get("gen_ai.tool.call.id"), attrs.get("gen_ai.tool.name")
    if not isinstance(ids, str) or not isinstance(names, str) or not ids.strip():
        return []
    id_list = [i.strip() for i in ids.split(",")]
    name_list = [n.strip() for n in names.split(",")]
    if len(id_list) != len(name_list):
        return []
    args = _json_sequence(attrs.get("gen_ai.tool.args"), len(id_list))
    calls = [_call(i, n, a) for i, n, a in zip(id_list, name_list, args, strict=True)]
    return [c for c in calls if c is not None]


def _json_sequence(value: Any, count: int) -> list[Any]:
    """``'{"a": 1}, {"b": 2}'`` -> the JSON values in order (the commas inside kept)."""
    out: list[Any] = []
    if isinstance(value, str):
        decoder, text, at = json.JSONDecoder(), value, 0
        while at < len(text) and len(out) < count:
            try:
                item, end = decoder.raw_decode(text, at)
            except json.JSONDecodeError:
                break
            out.append(item)
            at = end
            while at < len(text) and text[at] in ", ":
                at += 1
    return out if len(out) == count else [None] * count
