"""Validate native ingest events into rows ready for the store.

Shapes follow issue #2 / DESIGN.md §4; every error names its field as ``events[i].body.x``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import numpy as np

from app.ingest.attributes import opt_attributes, vetted_attributes
from app.ingest.fields import (
    FieldError,
    choice,
    decode_vector,
    opt_created_at,
    opt_float,
    opt_int,
    opt_str,
    opt_time,
    req_float,
    req_str,
)
from app.ingest.limits import IngestLimits
from app.ingest.score_values import OUT_OF_RANGE, score_value
from app.ingest.session_ids import MAX_ID_CHARS, SESSION_KEYS, USER_KEYS, first_id

EVENT_TYPES = ("trace", "span", "score", "embedding")
TRACE_STATUS = ("ok", "error")
SPAN_STATUS = ("ok", "error", "unset")
SOURCES = ("production", "eval", "shadow")
SPAN_KINDS = (
    "agent",
    "llm",
    "tool",
    "retrieval",
    "plan",
    "step",
    "chain",
    "embedding",
    "evaluator",
)
SCORE_KINDS = ("proxy", "true", "guardrail")
SCORE_SOURCES = ("online", "delayed", "human", "eval")
Id = TypeVar("Id", str, str | None)


@dataclass
class ValidEvent:
    index: int
    event_id: str
    type: str
    row: dict[str, Any]
    vector: np.ndarray | None = None
    # ``row["attributes"]`` as JSON, where validating it wrote that already (native spans).
    attributes_json: bytes | None = None


@dataclass(frozen=True)
class Rejection:
    index: int
    id: str | None
    error: str


def validate_events(
    events: list[Any], *, limits: IngestLimits = IngestLimits()
) -> tuple[list[ValidEvent], list[Rejection]]:
    def event_id(event: dict[str, Any], prefix: str) -> str:
        return req_str(event, "id", prefix, max_len=200)

    def parse(i: int, eid: str, event: dict[str, Any], prefix: str) -> ValidEvent:
        etype = event.get("type")
        if etype not in EVENT_TYPES:
            raise FieldError(
                f"{prefix}.type", f"unknown event type {etype!r}; use {', '.join(EVENT_TYPES)}"
            )
        body = event.get("body")
        if not isinstance(body, dict):
            raise FieldError(f"{prefix}.body", "must be an object")
        return _PARSERS[etype](i, eid, body, f"{prefix}.body", limits)

    return validate_items(events, "events", event_id, parse)


def validate_items(
    items: list[Any],
    field: str,
    item_id: Callable[[dict[str, Any], str], Id],
    parse: Callable[[int, Id, dict[str, Any], str], ValidEvent],
) -> tuple[list[ValidEvent], list[Rejection]]:
    """Each object of a batch array -> ``parse``'s event, or a rejection naming the field
    (``events[3].body.value``); the rejection keeps the item's id once ``item_id`` read it,
    so one bad item is refused alone. Native events and ``/api/v1/scores`` items share it."""
    valid: list[ValidEvent] = []
    rejected: list[Rejection] = []
    for i, item in enumerate(items):
        prefix = f"{field}[{i}]"
        event_id: Id | None = None
        try:
            if not isinstance(item, dict):
                raise FieldError(prefix, f"must be an object, not {type(item).__name__}")
            event_id = item_id(item, prefix)
            valid.append(parse(i, event_id, item, prefix))
        except FieldError as exc:
            rejected.append(Rejection(i, event_id, str(exc)))
    return valid, rejected


def _trace(i: int, eid: str, body: dict[str, Any], p: str, limits: IngestLimits) -> ValidEvent:
    row: dict[str, Any] = {
        "trace_id": req_str(body, "trace_id", p, 64),
        "agent": opt_str(body, "agent", p) or "",
        "agent_version": opt_str(body, "agent_version", p, 64) or "",
        "started_at": opt_time(body, "started_at", p),
        "ended_at": opt_time(body, "ended_at", p),
        "status": choice(body, "status", p, TRACE_STATUS, "ok"),
        "input_hash": opt_str(body, "input_hash", p),
        "entry_point": opt_str(body, "entry_point", p),
        "source": choice(body, "source", p, SOURCES, "production"),
        "counterfactual_of": opt_str(body, "counterfactual_of", p, 64),
    }
    attributes = row["attributes"] = opt_attributes(body, "attributes", p, limits)
    # The fields, else the conventions' attributes (app/sessions/attributes.py).
    row["session_id"] = opt_str(body, "session_id", p, MAX_ID_CHARS) or first_id(
        attributes, SESSION_KEYS
    )
    row["user_id"] = opt_str(body, "user_id", p, MAX_ID_CHARS) or first_id(attributes, USER_KEYS)
    return ValidEvent(i, eid, "trace", row)


def _span(i: int, eid: str, body: dict[str, Any], p: str, limits: IngestLimits) -> ValidEvent:
    status = choice(body, "status", p, SPAN_STATUS, "ok")
    started, ended = opt_time(body, "started_at", p), opt_time(body, "ended_at", p)
    row: dict[str, Any] = {
        "trace_id": req_str(body, "trace_id", p, 64),
        "span_id": req_str(body, "span_id", p, 64),
        "parent_span_id": opt_str(body, "parent_span_id", p, 64),
        "kind": choice(body, "kind", p, SPAN_KINDS, "step"),
        "name": opt_str(body, "name", p, 256) or "",
        "tool_name": opt_str(body, "tool_name", p),
        "status": "ok" if status == "unset" else status,
        "error_type": opt_str(body, "error_type", p),
        "started_at": started,
        "ended_at": ended,
        "step_index": opt_int(body, "step_index", p),
        "confidence": opt_float(body, "confidence", p, 0.0, 1.0),
        "request_model": opt_str(body, "request_model", p),
        "response_model": opt_str(body, "response_model", p),
        "input_tokens": opt_int(body, "input_tokens", p),
        "output_tokens": opt_int(body, "output_tokens", p),
        "total_tokens": opt_int(body, "total_tokens", p),
        "cost": opt_float(body, "cost", p, 0.0),
    }
    row["attributes"], attributes_json = vetted_attributes(body, "attributes", p, limits)
    row["latency_ms"] = _latency_ms(started, ended)
    return ValidEvent(i, eid, "span", row, attributes_json=attributes_json)


def _latency_ms(started: datetime | None, ended: datetime | None) -> float | None:
    if started is None or ended is None or ended < started:
        return None
    return (ended - started).total_seconds() * 1000.0


def _score(i: int, eid: str, body: dict[str, Any], p: str, _limits: IngestLimits) -> ValidEvent:
    return ValidEvent(i, eid, "score", score_row(body, p, req_str(body, "trace_id", p, 64)))


def score_row(body: dict[str, Any], p: str, trace_id: str) -> dict[str, Any]:
    """A score's row from its fields (``p`` prefixes the names in errors): the native
    ``score`` event's body and a ``/api/v1/scores`` item, which names its trace either way."""
    name, value = req_str(body, "name", p), req_float(body, "value", p)
    if score_value(value) is None:
        raise FieldError(f"{p}.value", OUT_OF_RANGE)
    row: dict[str, Any] = {
        "trace_id": trace_id,
        "name": name,
        "value": value,
        "kind": choice(body, "kind", p, SCORE_KINDS, "proxy"),
        "source": choice(body, "source", p, SCORE_SOURCES, "online"),
        "label": opt_str(body, "label", p),
        "explanation": opt_str(body, "explanation", p, 2000),
    }
    created = opt_created_at(body, p)
    if created is not None:
        row["created_at"] = created
    return row


def _embedding(i: int, eid: str, body: dict[str, Any], p: str, limits: IngestLimits) -> ValidEvent:
    vec = decode_vector(body, p, limits.max_embedding_dim)
    row: dict[str, Any] = {
        "stream": req_str(body, "stream", p),
        "model": opt_str(body, "model", p) or "",
        "dim": int(vec.size),
        "vector": vec.tobytes(),
        "trace_id": opt_str(body, "trace_id", p, 64),
        "sample_id": opt_str(body, "sample_id", p),
    }
    created = opt_created_at(body, p)
    if created is not None:
        row["created_at"] = created
    return ValidEvent(i, eid, "embedding", row, vector=vec)


_PARSERS = {"trace": _trace, "span": _span, "score": _score, "embedding": _embedding}
