"""What an evaluator reads of a trace: its input, final output, conversation, tool calls
and metadata, loaded for a whole batch of traces in a few queries.

The conversation is the trace page's (:func:`app.derive.conversation.conversation`), so a judge
reads what a person reads, from whichever convention carried it. Each text is cut to the
evaluator's bound (its head and its tail, with the cut said) before it reaches a prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.derive.conversation import ChatMessage, conversation
from app.models import Span, SpanEvent, Trace
from detectors.stored_times import step_order_key

_SPAN_FIELDS = ("span_id", "parent_span_id", "kind", "name", "tool_name", "status", "error_type",
                "started_at", "step_index", "request_model", "response_model",
                "attributes")  # fmt: skip


@dataclass
class ToolCall:
    name: str
    arguments: str
    status: str
    error: str | None
    result: str


@dataclass
class TraceContent:
    trace_id: str
    agent: str = ""
    agent_version: str = ""
    source: str = "production"
    environment: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    chat: list[ChatMessage] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)

    @property
    def input(self) -> str:
        return "\n".join(m.text for m in self.chat if m.role == "user")

    @property
    def output(self) -> str:
        answers = [m.text for m in self.chat if m.role == "assistant" and m.text]
        return answers[-1] if answers else ""

    @property
    def conversation(self) -> str:
        lines = []
        for m in self.chat:
            who = f"{m.role} ({m.name})" if m.name else m.role
            text = m.text
            for c in m.calls:
                if c.get("name"):
                    text += f"\n[calls {c['name']}({c.get('arguments', '')})]"
            if m.status == "error":
                text += f"\n[failed: {m.error or 'error'}]"
            lines.append(f"{who}: {text}")
        return "\n".join(lines)

    @property
    def tool_calls_text(self) -> str:
        return "\n".join(
            f"{c.name}({c.arguments}) -> "
            + (f"FAILED {c.error or ''}".rstrip() if c.status == "error" else "ok")
            + (f": {c.result}" if c.result else "")
            for c in self.tool_calls
        )

    def metadata(self, key: str) -> str:
        fixed = {"agent": self.agent, "agent_version": self.agent_version, "source": self.source,
                 "trace_id": self.trace_id}  # fmt: skip
        if key in fixed:
            return fixed[key]
        value = self.attributes.get(key)
        return "" if value is None else str(value)


def cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters: its head and tail, the cut said between them.

    >>> cut("abcdefghij", 100)
    'abcdefghij'
    >>> cut("a" * 300 + "b" * 300, 200)[:5], len(cut("a" * 300 + "b" * 300, 200)) <= 200
    ('aaaaa', True)
    """
    if len(text) <= limit:
        return text
    note = f"\n[... {len(text) - limit + 40} characters cut ...]\n"
    keep = max(0, limit - len(note))
    return text[: keep // 2] + note + text[len(text) - (keep - keep // 2) :]


def load_contents(
    session: Session, *, project_id: int, trace_ids: Sequence[str]
) -> dict[str, TraceContent]:
    """Each stored trace of ``trace_ids`` with its chat and tool calls (three queries)."""
    ids = list(dict.fromkeys(trace_ids))
    if not ids:
        return {}
    out: dict[str, TraceContent] = {}
    for t in session.scalars(
        select(Trace).where(Trace.project_id == project_id, Trace.trace_id.in_(ids))
    ):
        attrs = dict(t.attributes or {})
        env = attrs.get("resource.deployment.environment.name") or attrs.get(
            "resource.deployment.environment"
        )
        out[t.trace_id] = TraceContent(
            t.trace_id, t.agent, t.agent_version, t.source, None if env is None else str(env), attrs
        )
    spans: dict[str, list[dict[str, Any]]] = {tid: [] for tid in out}
    cols = [getattr(Span, f) for f in _SPAN_FIELDS]
    for row in session.execute(
        select(Span.trace_id, *cols).where(Span.project_id == project_id, Span.trace_id.in_(ids))
    ):
        if row[0] in spans:
            spans[row[0]].append(dict(zip(_SPAN_FIELDS, row[1:], strict=True)))
    events: dict[str, dict[str, list[dict[str, Any]]]] = {tid: {} for tid in out}
    for tid, sid, name, attributes, body in session.execute(
        select(SpanEvent.trace_id, SpanEvent.span_id, SpanEvent.name, SpanEvent.attributes,
               SpanEvent.body)
        .where(SpanEvent.project_id == project_id, SpanEvent.trace_id.in_(ids))
        .order_by(SpanEvent.time, SpanEvent.id)
    ):  # fmt: skip
        if tid in events:
            events[tid].setdefault(sid, []).append(
                {"name": name, "attributes": attributes or {}, "body": body}
            )
    for tid, content in out.items():
        ordered = sorted(spans[tid], key=step_order_key)
        content.chat = conversation(ordered, events[tid])
        content.tool_calls = [
            ToolCall(m.name, str(m.calls[0].get("arguments", "")) if m.calls else "", m.status,
                     m.error, "" if m.text == "(no result captured)" else m.text)
            for m in content.chat
            if m.role == "tool" and m.name
        ]  # fmt: skip
        if not content.tool_calls:  # no tool spans: the calls the model requested
            content.tool_calls = [
                ToolCall(str(c.get("name")), str(c.get("arguments", "")), "ok", None, "")
                for m in content.chat
                if m.role == "assistant"
                for c in m.calls
                if c.get("name")
            ]
    return out
