"""What the trace page shows: the conversation as a chat, a waterfall of spans, the steps
the detectors see and the scores read with the project's roles.

Nothing here parses a convention: an LLM span's messages come from
:func:`app.derive.messages.call_content` (OTel GenAI attributes and log events,
OpenInference, OpenLLMetry, OpenLIT), the calls it requested from the span's
``telltale.tool_calls.requested`` (written by the OTLP receiver) or its events
(:func:`app.monitors.windows.rows.chunk_records` joins them as the monitors do), and the
steps are the monitors' own records (:mod:`detectors.records`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.derive.conversation import (  # noqa: F401 (the page's names)
    FOLD_AT,
    INPUT,
    OTHER_INPUTS,
    SYSTEM,
    TOOL_INPUT,
    TOOL_OUTPUT,
    ChatMessage,
    conversation,
)
from app.models import SpanEvent
from app.monitors.windows.rows import chunk_records
from app.pricing.calls import NO_MODEL, NO_PRICE, NO_TOKENS
from app.pricing.coverage import SETTINGS_PAGE
from app.scores.roles import get_roles
from app.web.trace_evaluations import TraceEvaluation, trace_evaluations, written_by

# A span's attribute values shown in full up to this length: an LLM span's input repeats
# the conversation so far, so a long trace's raw attributes grow with the square of its
# length (19 MB of HTML for 500 spans): each value shows as much as a chat message before it folds; the whole values stay in the traces API.
ATTR_SHOW = 600


def events_of(session: Session, project_id: int, trace_id: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    rows = session.execute(
        select(SpanEvent.span_id, SpanEvent.name, SpanEvent.attributes, SpanEvent.body)
        .where(SpanEvent.project_id == project_id, SpanEvent.trace_id == trace_id)
        .order_by(SpanEvent.time, SpanEvent.id)
    )
    for span_id, name, attributes, body in rows:
        out.setdefault(span_id, []).append(
            {"name": name, "attributes": attributes or {}, "body": body}
        )
    return out


def waterfall(spans: list[dict[str, Any]], depth: dict[str, int]) -> dict[str, Any]:
    """Each span's offset and length as fractions of the trace (drawn as SVG bars), with
    its duration, model, tokens and cost; totals for the trace."""
    times = [
        (s["started_at"], s["ended_at"])
        for s in spans
        if isinstance(s.get("started_at"), datetime) and isinstance(s.get("ended_at"), datetime)
    ]
    t0 = min((a for a, _ in times), default=None)
    t1 = max((b for _, b in times), default=None)
    total = (t1 - t0).total_seconds() if t0 and t1 else 0.0
    rows = []
    for s in spans:
        start, end = s.get("started_at"), s.get("ended_at")
        ms = s.get("latency_ms")
        if ms is None and isinstance(start, datetime) and isinstance(end, datetime):
            ms = (end - start).total_seconds() * 1000
        offset = width = None
        if total > 0 and t0 is not None and isinstance(start, datetime):
            offset = max(0.0, (start - t0).total_seconds() / total)
            width = max(0.004, ((ms or 0) / 1000) / total)
            width = min(width, 1.0 - offset) if offset < 1 else 0.004
        rows.append(
            {
                "span": s,
                "depth": depth.get(s["span_id"], 0),
                "ms": ms,
                "x": round((offset or 0) * 1000, 1),
                "w": round((width or 0) * 1000, 1),
                "drawn": offset is not None,
            }  # fmt: skip
        )
    tokens = [
        s.get("total_tokens") or ((s.get("input_tokens") or 0) + (s.get("output_tokens") or 0))
        for s in spans
    ]
    costs = [s["cost"] for s in spans if s.get("cost") is not None]
    llm = [s for s in spans if s.get("kind") == "llm"]
    return {
        "rows": rows,
        "total_ms": total * 1000 if total else None,
        "tokens": sum(t for t in tokens if t) or None,
        "cost": sum(costs) if costs else None,
        "llm_calls": len(llm),
        "unpriced_calls": sum(1 for s in llm if s.get("cost") is None),
    }


def cost_note(span: dict[str, Any]) -> str | None:
    """Beside a call's cost, what it was priced with; instead of it, why it has none.

    >>> cost_note({"kind": "llm", "cost": 0.01, "cost_source": "table 2026-12-05"})
    'computed with the price table of 2026-12-05'
    >>> cost_note({"kind": "llm", "cost": None, "cost_source": "no price", "response_model": "foo-7b"})
    'cost unknown: model foo-7b has no price; set one in Settings · Model prices'
    """
    source = span.get("cost_source")
    if span.get("kind") != "llm":
        return None
    if span.get("cost") is not None:
        if source and source.startswith("table "):
            return f"computed with the price table of {source.removeprefix('table ')}"
        if source and source.startswith("project "):
            return f"computed with this project's price of {source.removeprefix('project ')}"
        return None  # as the instrumentation sent it
    model = span.get("response_model") or span.get("request_model")
    return {
        NO_PRICE: f"cost unknown: model {model} has no price; set one in {SETTINGS_PAGE}",
        NO_TOKENS: "cost unknown: the call sent no token counts",
        NO_MODEL: "cost unknown: the call named no model",
        None: "not priced yet: calls are priced when their trace settles",
    }.get(source, f"cost unknown ({source})")


def detector_steps(session: Session, *, project_id: int, trace_id: str) -> list[Any]:
    """The steps the monitors read for this trace (wrappers dropped, requested tool calls
    added as tool steps), from the same mapper they use."""
    found = chunk_records(session, [trace_id], project_id=project_id, as_of=None, scores=False)
    return list(found[0].steps) if found else []


def scores(
    session: Session, *, project_id: int, rows: list[dict[str, Any]],
    evaluations: Sequence[TraceEvaluation] = (),
) -> list[dict[str, Any]]:  # fmt: skip
    """Each score with the role the monitors read it with (the project's score roles),
    the kind it was sent with when that differs, and the evaluation that wrote it (its
    evaluator, version and reason) when an online evaluator did."""
    roles = get_roles(session, project_id=project_id)
    label_sources = set(roles.label_sources)
    out = []
    for sc in rows:
        role = roles.kind_of(sc["name"], sc["kind"])
        out.append(
            {
                **sc,
                "role": role,
                "sent_as": sc["kind"] if role != sc["kind"] else None,
                "is_label": role == "true" and sc["source"] in label_sources,
                "evaluation": written_by(sc, evaluations),
            }  # fmt: skip
        )
    return out


def attribute_dump(attrs: dict[str, Any], limit: int = ATTR_SHOW) -> str:
    """The attributes as indented JSON, each string value past ``limit`` characters cut
    with a note of how much more there is."""

    def cut(value: Any) -> Any:
        if isinstance(value, str) and len(value) > limit:
            return f"{value[:limit]}… [{len(value) - limit:,} more characters]"
        return value

    return json.dumps({k: cut(v) for k, v in attrs.items()}, indent=2, default=str)


def trace_view(
    session: Session, *, project_id: int, trace: dict[str, Any], depth: dict[str, int]
) -> dict[str, Any]:
    spans = trace["spans"]
    events = events_of(session, project_id, trace["trace_id"])
    has_row = "agent" in trace
    evaluations = trace_evaluations(session, project_id=project_id, trace_id=trace["trace_id"])
    return {
        "cost_notes": {s["span_id"]: note for s in spans if (note := cost_note(s))},
        "attribute_dumps": {
            s["span_id"]: attribute_dump(s["attributes"]) for s in spans if s.get("attributes")
        },
        "trace_attributes": attribute_dump(trace.get("attributes") or {}),
        "chat": conversation(spans, events),
        "waterfall": waterfall(spans, depth),
        "steps": (
            detector_steps(session, project_id=project_id, trace_id=trace["trace_id"])
            if has_row
            else []
        ),
        "scores": scores(session, project_id=project_id, rows=trace["scores"],
                         evaluations=evaluations),
        "evaluation_errors": [e for e in evaluations if e.status == "error"],
    }
