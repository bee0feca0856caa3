"""Feedback and delayed ground truth as scores: ``POST /api/v1/scores`` items, checked.

Each item names its trace by ``trace_id`` (the id as stored: native ingest's own id, or
an OTLP trace's 32 lowercase hex digits) or by ``otel_trace_id`` (32 hex digits in any
case, as a tracing UI or ``span.get_span_context().trace_id`` formatted with ``032x``
shows it), and becomes one score event through the same write path as ``/api/v1/ingest``.

Idempotency: ``event_id`` when given (a re-send is a duplicate). Without it, an item with
``created_at`` gets an id from its content (trace, name, source, time, value), so a
retried request is a duplicate too; an item with neither is a new score every time it is
sent (the product's thumbs-up clicks are separate observations).

A score may arrive before its trace (feedback is often sent from another service, and
delayed labels may outlive a trace's retention): it is stored and joins its trace when
the trace arrives; the answer counts such scores in ``pending_traces``.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from datetime import datetime
from typing import Any

from app.ingest.events import Rejection, ValidEvent, score_row, validate_items
from app.ingest.fields import FieldError, as_str, opt_str, req_str

FIELDS = (
    "trace_id", "otel_trace_id", "name", "value", "label", "explanation", "source", "kind",
    "created_at", "event_id",
)  # fmt: skip
_HEX32 = re.compile(r"^[0-9a-fA-F]{32}$")


def validate_scores(items: list[Any]) -> tuple[list[ValidEvent], list[Rejection]]:
    """Each item -> a score event, or a rejection naming its field (``scores[3].value``)."""

    def event_id(item: dict[str, Any], prefix: str) -> str | None:
        return opt_str(item, "event_id", prefix, 200)

    def parse(i: int, eid: str | None, item: dict[str, Any], prefix: str) -> ValidEvent:
        row = _row(item, prefix)
        return ValidEvent(i, eid or _derived_id(row), "score", row)

    return validate_items(items, "scores", event_id, parse)


def _row(item: dict[str, Any], p: str) -> dict[str, Any]:
    unknown = sorted(k for k in item if k not in FIELDS)
    if unknown:
        raise FieldError(
            f"{p}.{unknown[0]}", f"unknown field; expected some of: {', '.join(FIELDS)}"
        )
    return score_row(item, p, _trace_id(item, p))


def _trace_id(item: dict[str, Any], p: str) -> str:
    native, otel = item.get("trace_id"), item.get("otel_trace_id")
    if native is not None and otel is not None:
        raise FieldError(f"{p}.otel_trace_id", "give trace_id or otel_trace_id, not both")
    if otel is None:
        return req_str(item, "trace_id", p, 64)
    text = as_str(otel, f"{p}.otel_trace_id", 32)
    if not _HEX32.match(text):
        raise FieldError(f"{p}.otel_trace_id", "must be 32 hexadecimal digits (16 bytes)")
    if not text.strip("0"):
        raise FieldError(f"{p}.otel_trace_id", "is all zeros (not a valid trace id)")
    return text.lower()  # OTLP traces are stored as lowercase hex


def _derived_id(row: dict[str, Any]) -> str:
    created = row.get("created_at")
    if not isinstance(created, datetime):
        return f"score:{uuid.uuid4().hex}"
    content = "\x1f".join(
        (row["trace_id"], row["name"], row["source"], created.isoformat(), repr(row["value"]))
    )
    return f"score:{hashlib.sha256(content.encode()).hexdigest()[:40]}"
