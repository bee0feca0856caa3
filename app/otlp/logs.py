"""Map an OTLP ``ExportLogsServiceRequest`` onto span events and scores.

A log record whose event name (``event_name``, else the older ``event.name`` attribute)
starts with ``gen_ai.`` is a GenAI event (``gen_ai.client.inference.operation.details``,
``gen_ai.user.message``, ``gen_ai.choice``, ``gen_ai.evaluation.result``...): with a
trace and span id it is stored as a ``span_event`` of that span (joined when read, so
either may arrive first); a ``gen_ai.evaluation.result`` with a numeric
``gen_ai.evaluation.score.value`` is also a score of the trace (kind ``proxy``) named by
``gen_ai.evaluation.name``. The tool calls an event's messages requested, and the tool
results they carry, are kept on the event
(:func:`app.otlp.message_tool_calls.event_tool_calls`).
Every other log record is counted, not stored.

A re-sent record is a duplicate: its event id hashes what it says. A record with a bad
id, too deep or too big is refused alone (``partial_success.rejected_log_records``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from app.ingest.events import ValidEvent
from app.ingest.limits import IngestLimits
from app.ingest.score_values import OUT_OF_RANGE, score_value
from app.otlp.decode import TooDeep, clean, hex_id, pb_attributes, pb_value, too_deep
from app.otlp.mapping import MAX_MESSAGES, ns_to_datetime
from app.otlp.message_tool_calls import event_tool_calls

GENAI_PREFIX = "gen_ai."
EVALUATION = "gen_ai.evaluation.result"


@dataclass
class MappedLogs:
    events: list[ValidEvent] = field(default_factory=list)
    genai: int = 0  # GenAI events of a span, to store
    unlinked: int = 0  # GenAI events without a span: counted only
    other: int = 0  # any other log record: counted only
    rejected: int = 0
    messages: list[str] = field(default_factory=list)

    def note(self, message: str) -> None:
        if len(self.messages) < MAX_MESSAGES:
            self.messages.append(message)


def event_name(record: Any) -> str:
    if record.event_name:
        return clean(record.event_name)
    for kv in record.attributes:  # the attribute form of SDKs before LogRecord.event_name
        if kv.key == "event.name":
            return clean(kv.value.string_value)
    return ""


def map_logs(
    request: ExportLogsServiceRequest, *, limits: IngestLimits = IngestLimits()
) -> MappedLogs:
    out = MappedLogs()
    index = 0
    for rl in request.resource_logs:
        for sl in rl.scope_logs:
            for record in sl.log_records:
                name = event_name(record)
                if not name.startswith(GENAI_PREFIX):
                    out.other += 1
                elif not record.trace_id and not record.span_id:
                    out.unlinked += 1
                else:
                    error = _genai_event(record, name, index, limits, out)
                    if error is not None:
                        out.rejected += 1
                        out.note(f"log record {index} ({name[:60]!r}): {error}")
                index += 1
    return out


def _genai_event(
    record: Any, name: str, index: int, limits: IngestLimits, out: MappedLogs
) -> str | None:
    trace_id, error = hex_id(record.trace_id, "trace_id")
    span_id, span_error = hex_id(record.span_id, "span_id")
    if error or span_error:
        return error or span_error
    depth = limits.max_attribute_depth
    try:
        attributes = pb_attributes(record.attributes, depth)
    except TooDeep as exc:
        return too_deep(exc, "attributes", depth)
    try:
        body = pb_value(record.body, depth) if record.HasField("body") else None
    except TooDeep as exc:
        return too_deep(exc, "body", depth)
    attributes.pop("event.name", None)
    content = orjson.dumps([name, record.time_unix_nano, attributes, body])
    if len(content) > limits.max_attributes_bytes:
        return (
            f"attributes and body: {len(content)} bytes as JSON exceed the limit of "
            f"{limits.max_attributes_bytes}"
        )
    at = ns_to_datetime(record.time_unix_nano or record.observed_time_unix_nano)
    digest = hashlib.sha256(content).hexdigest()[:24]
    event_id = f"otlp-log:{trace_id}:{span_id}:{digest}"
    # The tool calls in its messages, kept beside them: windows join them onto the span.
    attributes.update(event_tool_calls(name, attributes, body))
    row = {
        "trace_id": trace_id,
        "span_id": span_id,
        "name": name[:128],
        "time": at,
        "attributes": attributes,
        "body": body,
    }
    out.events.append(ValidEvent(index, event_id, "span_event", row))
    out.genai += 1
    if name == EVALUATION:
        _evaluation_score(attributes, trace_id, at, index, event_id, out)
    return None


def _evaluation_score(
    attributes: dict[str, Any],
    trace_id: str,
    at: Any,
    index: int,
    event_id: str,
    out: MappedLogs,
) -> None:
    metric = attributes.get("gen_ai.evaluation.name")
    given = attributes.get("gen_ai.evaluation.score.value")
    if not isinstance(metric, str) or not 0 < len(metric) <= 128:
        return
    value = score_value(given)
    if value is None:
        if given is not None:
            out.note(f"log record {index}: gen_ai.evaluation.score.value {OUT_OF_RANGE}; no score")
        return
    row: dict[str, Any] = {
        "trace_id": trace_id,
        "name": metric,
        "value": value,
        "kind": "proxy",
        "source": "online",
        "label": _label(attributes.get("gen_ai.evaluation.score.label"), 128),
        "explanation": _label(attributes.get("gen_ai.evaluation.explanation"), 2000),
    }
    if at is not None:
        row["created_at"] = at
    out.events.append(ValidEvent(index, f"{event_id}:score", "score", row))


def _label(value: Any, limit: int) -> str | None:
    return value[:limit] if isinstance(value, str) and value else None
