"""The failure events of one trace, as the derive job finds them: what is grouped into
issues (:mod:`app.issues`).

How real agents fail (DESIGN §4): model calls rarely error; failed tool calls, loops and
failed outcomes are the errors. So a trace's failure events are

- each failed *step* (:func:`detectors.agent_steps.agent_steps`: actions, not wrappers;
  a step that failed only because its child raised is left out, the child is the event):
  source ``tool`` for a tool call, ``step`` for any other action;
- each failed agent or chain span (or root) with no failed span below it: the agent's own
  code raised; source ``step``, its kind as the span kind;
- its tool loop (:mod:`app.derive.loops`), source ``loop``, error type ``ToolLoop``;
- its failed derivation (:mod:`app.derive.failures`), source ``derive``.

A failure's message is what the telemetry said about it, first found of: the span's
status message (OTel ``Status.description``), an ``exception`` event's
``exception.message``, the attributes ``exception.message`` / ``error.message``, and for
a tool call its result text (many frameworks return the error as the result).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from app.derive.conversation import TOOL_OUTPUT
from app.derive.loops import ToolLoop
from app.issues.failures import Failure
from detectors.agent_steps import WRAPPER_KINDS, agent_steps

MAX_EVENTS_PER_TRACE = 50  # a trace of 10,000 failing steps is one trace, not 10,000 rows
_MESSAGE_ATTRIBUTES = ("otel.status_message", "exception.message", "error.message")
_MAX = {"tool": 128, "error_type": 128, "message": 1000, "span_kind": 16}


def _cut(name: str, value: Any) -> str:
    return ("" if value is None else str(value))[: _MAX[name]]


def span_message(span: Mapping[str, Any]) -> str:
    """What the telemetry said about a failed span (module docstring's order).

    >>> span_message({"attributes": {"otel.events": [
    ...     {"name": "exception", "attributes": {"exception.message": "boom"}}]}})
    'boom'
    >>> span_message({"kind": "tool", "attributes": {"gen_ai.tool.call.result": "Error: no"}})
    'Error: no'
    """
    attrs = span.get("attributes") or {}
    if isinstance(attrs.get("otel.status_message"), str) and attrs["otel.status_message"]:
        return str(attrs["otel.status_message"])
    events = attrs.get("otel.events")
    for ev in events if isinstance(events, list) else []:
        if isinstance(ev, dict) and ev.get("name") == "exception":
            given = ev.get("attributes")
            if isinstance(given, dict) and given.get("exception.message"):
                return str(given["exception.message"])
    for name in _MESSAGE_ATTRIBUTES[1:]:
        if attrs.get(name):
            return str(attrs[name])
    if span.get("kind") == "tool":
        result = next((attrs[k] for k in TOOL_OUTPUT if attrs.get(k)), None)
        if result is not None:
            return result if isinstance(result, str) else str(result)
    return ""


def trace_failures(
    trace: Mapping[str, Any], spans: Sequence[Mapping[str, Any]], loop: ToolLoop | None
) -> list[Failure]:
    """The failure events of one trace, at most :data:`MAX_EVENTS_PER_TRACE`."""
    out: list[Failure] = []
    steps = agent_steps(spans)
    for span, inherited in [*steps, *_failed_on_their_own(spans, steps)]:
        if span.get("status") != "error" or inherited:
            continue
        kind = str(span.get("kind") or "step")
        tool = span.get("tool_name") or span.get("name") if kind == "tool" else ""
        out.append(Failure(
            source="tool" if kind == "tool" else "step", span_id=str(span["span_id"]),
            at=span.get("started_at") or trace.get("started_at"), span_kind=_cut("span_kind", kind),
            tool=_cut("tool", tool), error_type=_cut("error_type", span.get("error_type") or "error"),
            message=_cut("message", span_message(span)),
        ))  # fmt: skip
    out.sort(key=lambda f: (f.at is None, f.at or datetime.min, f.span_id or ""))
    out = out[: MAX_EVENTS_PER_TRACE - 1]
    if loop is not None and loop.tool is not None:
        out.append(Failure(
            source="loop", span_id=None, at=trace.get("started_at"), span_kind="tool",
            tool=_cut("tool", loop.tool), error_type="ToolLoop",
            message=_cut("message", loop.sentence()),
        ))  # fmt: skip
    return out


def _failed_on_their_own(
    spans: Sequence[Mapping[str, Any]], steps: Sequence[tuple[Mapping[str, Any], bool]]
) -> list[tuple[Mapping[str, Any], bool]]:
    """Failed agent/chain spans and failed roots with no failed span below them: the agent's
    own code raised (not a tool, not a model call). A failed HTTP span inside a model call
    is left out: the call around it may have retried and succeeded.

    Each failed span marks its ancestors once (a walk stops at a marked one), so a deep
    chain costs its length, not its square."""
    by_id = {str(s["span_id"]): s for s in spans if s.get("span_id") is not None}
    failed_below: set[str] = set()
    for s in spans:
        if s.get("status") != "error":
            continue
        parent = s.get("parent_span_id")
        while parent and parent in by_id and parent not in failed_below:
            failed_below.add(parent)
            parent = by_id[parent].get("parent_span_id")
    step_ids = {str(s["span_id"]) for s, _ in steps}
    return [
        (s, False) for s in spans
        if s.get("status") == "error" and str(s["span_id"]) not in step_ids
        and str(s["span_id"]) not in failed_below
        and (s.get("kind") in WRAPPER_KINDS or not s.get("parent_span_id"))
    ]  # fmt: skip


def derive_failure(trace: Mapping[str, Any], reason: str) -> Failure:
    """The event of a trace the derive job set aside (``reason``: ``Type: first line``)."""
    error_type, _, message = reason.partition(": ")
    return Failure(
        source="derive", span_id=None, at=trace.get("started_at"), span_kind="derive", tool="",
        error_type=_cut("error_type", error_type), message=_cut("message", message or reason),
    )  # fmt: skip
