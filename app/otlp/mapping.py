"""Map decoded OTLP spans onto Telltale span, score and trace rows.

Conventions read, first match wins:

- span kind: ``gen_ai.operation.name`` (OpenTelemetry GenAI), ``openinference.span.kind``
  (OpenInference / Phoenix), ``traceloop.span.kind`` and ``llm.request.type`` (OpenLLMetry),
  then any ``gen_ai.system`` / ``gen_ai.provider.name`` means an LLM call; else ``step``;
- agent: ``gen_ai.agent.name`` / ``gen_ai.agent.version``, else the resource's
  ``service.name`` / ``service.version``;
- ``telltale.*`` extras (README, "OpenTelemetry (OTLP) ingestion") fill trace and span
  columns and scores. A bad ``telltale.*`` value does not cost the span: the value is left
  in the attributes and a warning goes back in ``partial_success.error_message``.

Every attribute is kept on the span, unknown ones included; a span whose attributes map
(with its events) is over ``max_attributes_bytes`` as JSON is refused alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from app.ingest.events import SCORE_KINDS, SCORE_SOURCES, SOURCES, ValidEvent
from app.ingest.limits import IngestLimits
from app.otlp.decode import STATUS_ERROR, DecodedSpan

_GENAI_KIND = {
    "invoke_agent": "agent",
    "create_agent": "agent",
    "execute_tool": "tool",
    "chat": "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    "embeddings": "embedding",
    "plan": "plan",
    "retrieval": "retrieval",
}
_OPENINFERENCE_KIND = {
    "AGENT": "agent",
    "TOOL": "tool",
    "LLM": "llm",
    "CHAIN": "chain",
    "RETRIEVER": "retrieval",
    "RERANKER": "retrieval",
    "EMBEDDING": "embedding",
    "EVALUATOR": "evaluator",
    "GUARDRAIL": "evaluator",
}
_TRACELOOP_KIND = {"agent": "agent", "tool": "tool", "workflow": "chain", "task": "step"}
_LLM_REQUEST_TYPE = {"chat": "llm", "completion": "llm", "embedding": "embedding"}
_OTEL_SPAN_KIND = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
_SCORE_PREFIX = "telltale.score."
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_MESSAGES = 10


@dataclass
class MappedBatch:
    events: list[ValidEvent] = field(default_factory=list)
    traces: list[dict[str, Any]] = field(default_factory=list)
    rejected: int = 0
    messages: list[str] = field(default_factory=list)

    def note(self, message: str) -> None:
        if len(self.messages) < MAX_MESSAGES:
            self.messages.append(message)


def ns_to_datetime(ns: int) -> datetime | None:
    # Integer microseconds: a float of epoch seconds would round them.
    return _EPOCH + timedelta(microseconds=ns // 1000) if ns > 0 else None


def _text(value: Any, limit: int) -> str | None:
    if value is None or value == "":
        return None
    return str(value)[:limit]


def span_kind(attrs: dict[str, Any]) -> str:
    op = attrs.get("gen_ai.operation.name")
    if isinstance(op, str) and op in _GENAI_KIND:
        return _GENAI_KIND[op]
    oi = attrs.get("openinference.span.kind")
    if isinstance(oi, str) and oi.upper() in _OPENINFERENCE_KIND:
        return _OPENINFERENCE_KIND[oi.upper()]
    tl = attrs.get("traceloop.span.kind")
    if isinstance(tl, str) and tl in _TRACELOOP_KIND:
        return _TRACELOOP_KIND[tl]
    rt = attrs.get("llm.request.type")
    if isinstance(rt, str) and rt in _LLM_REQUEST_TYPE:
        return _LLM_REQUEST_TYPE[rt]
    if "gen_ai.tool.name" in attrs:
        return "tool"
    if "gen_ai.system" in attrs or "gen_ai.provider.name" in attrs:
        return "llm"
    return "step"


def _tool_name(attrs: dict[str, Any], kind: str) -> str | None:
    # Only a tool span names the tool it ran: on an LLM span ``gen_ai.tool.name`` lists the
    # tools *offered* to the model (OpenLIT writes "a, b"), which is no tool call.
    if kind != "tool":
        return None
    name = attrs.get("gen_ai.tool.name") or attrs.get("tool.name")
    return _text(name if name is not None else attrs.get("traceloop.entity.name"), 128)


def _error_type(sp: DecodedSpan) -> str | None:
    err = sp.attributes.get("error.type")
    if err not in (None, ""):
        return str(err)[:128]
    for ev in sp.events:
        if ev["name"] == "exception" and ev["attributes"].get("exception.type"):
            return str(ev["attributes"]["exception.type"])[:128]
    return None


def _normalise(attrs: dict[str, Any], sp: DecodedSpan) -> dict[str, Any]:
    """Fill the GenAI names from their OpenInference / legacy twins, add OTLP context."""
    if "gen_ai.request.model" not in attrs and isinstance(attrs.get("llm.model_name"), str):
        attrs["gen_ai.request.model"] = attrs["llm.model_name"]
    if "gen_ai.provider.name" not in attrs:
        for legacy in ("gen_ai.system", "llm.provider", "llm.system"):
            if isinstance(attrs.get(legacy), str):
                attrs["gen_ai.provider.name"] = attrs[legacy]
                break
    if sp.scope:
        attrs["otel.scope.name"] = sp.scope
    if sp.kind in _OTEL_SPAN_KIND:
        attrs["otel.span.kind"] = _OTEL_SPAN_KIND[sp.kind]
    if sp.status_message:
        attrs["otel.status_message"] = sp.status_message
    if sp.events:
        attrs["otel.events"] = sp.events
    return attrs


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def map_spans(
    spans: list[DecodedSpan], *, max_attributes_bytes: int = IngestLimits.max_attributes_bytes
) -> MappedBatch:
    out = MappedBatch()
    traces: dict[str, _TraceAcc] = {}
    for index, sp in enumerate(spans):
        error = sp.error or _oversize(sp, max_attributes_bytes)
        if error is not None:
            out.rejected += 1
            out.note(f"span {index} ({sp.name[:60]!r}): {error}")
            continue
        attrs = sp.attributes
        where = f"span {sp.span_id}"
        kind = span_kind(attrs)
        failed = sp.status_code == STATUS_ERROR or attrs.get("error.type") not in (None, "")
        started = ns_to_datetime(sp.start_ns)
        ended = ns_to_datetime(sp.end_ns)
        row = {
            "trace_id": sp.trace_id,
            "span_id": sp.span_id,
            "parent_span_id": sp.parent_span_id,
            "kind": kind,
            "name": sp.name[:256],
            "tool_name": _tool_name(attrs, kind),
            "status": "error" if failed else "ok",
            "error_type": _error_type(sp),
            "started_at": started,
            "ended_at": ended,
            "step_index": _step_index(attrs, where, out),
            "confidence": _confidence(attrs, where, out),
            "attributes": _normalise(attrs, sp),
        }
        out.events.append(ValidEvent(index, f"otlp:{sp.trace_id}:{sp.span_id}", "span", row))
        _scores(sp, index, ended or started, out)
        acc = traces.get(sp.trace_id)
        if acc is None:
            acc = traces[sp.trace_id] = _TraceAcc(sp.trace_id)
        acc.add(sp, kind, failed, started, ended, out)
    out.traces = [acc.row() for acc in traces.values()]
    return out


def _oversize(sp: DecodedSpan, limit: int) -> str | None:
    # Measured as stored: the attributes plus the events that _normalise adds to them.
    size = len(orjson.dumps(sp.attributes)) + (len(orjson.dumps(sp.events)) if sp.events else 0)
    return f"attributes: {size} bytes as JSON exceed the limit of {limit}" if size > limit else None


def _step_index(attrs: dict[str, Any], where: str, out: MappedBatch) -> int | None:
    value = attrs.get("telltale.step_index")
    if value is None:
        return None
    number = _number(value)
    if number is None or number != int(number) or not 0 <= number < 2**31:
        out.note(f"{where}: telltale.step_index must be an integer >= 0; ignored")
        return None
    return int(number)


def _confidence(attrs: dict[str, Any], where: str, out: MappedBatch) -> float | None:
    value = attrs.get("telltale.confidence")
    if value is None:
        return None
    number = _number(value)
    if number is None or not 0.0 <= number <= 1.0:
        out.note(f"{where}: telltale.confidence must be a number in [0, 1]; ignored")
        return None
    return number


def _scores(sp: DecodedSpan, index: int, at: datetime | None, out: MappedBatch) -> None:
    for key, value in sp.attributes.items():
        if not key.startswith(_SCORE_PREFIX):
            continue
        name = key[len(_SCORE_PREFIX) :]
        if name.endswith((".kind", ".source")):
            continue
        where = f"span {sp.span_id}: {key}"
        number = _number(value)
        if number is None or not name or len(name) > 128:
            out.note(f"{where}: must be a finite number and the name 1-128 characters; ignored")
            continue
        kind = sp.attributes.get(f"{key}.kind", "proxy")
        source = sp.attributes.get(f"{key}.source", "online")
        if kind not in SCORE_KINDS or source not in SCORE_SOURCES:
            out.note(f"{where}: .kind must be one of {SCORE_KINDS}, .source one of {SCORE_SOURCES}")
            continue
        row: dict[str, Any] = {
            "trace_id": sp.trace_id,
            "name": name,
            "value": number,
            "kind": kind,
            "source": source,
        }
        if at is not None:
            row["created_at"] = at
        event_id = f"otlp:{sp.trace_id}:{sp.span_id}:score:{name}"
        out.events.append(ValidEvent(index, event_id, "score", row))


_TRACE_FIELDS = (
    ("input_hash", "telltale.input_hash", 128),
    ("entry_point", "telltale.entry_point", 128),
    ("counterfactual_of", "telltale.counterfactual_of", 64),
)


class _TraceAcc:
    """What one request says about one trace; merged into the stored row by traces.py."""

    def __init__(self, trace_id: str) -> None:
        self.trace_id = trace_id
        self.started: datetime | None = None
        self.ended: datetime | None = None
        self.failed = False
        # rank 2: the root span is here; 1: an agent span; 0: only other spans.
        self.rank = -1
        self.rank_start = 0
        self.agent = ""
        self.agent_version = ""
        self.fields: dict[str, Any] = {}
        self.source: str | None = None
        self.attributes: dict[str, Any] = {}

    def add(
        self,
        sp: DecodedSpan,
        kind: str,
        failed: bool,
        started: datetime | None,
        ended: datetime | None,
        out: MappedBatch,
    ) -> None:
        if started is not None and (self.started is None or started < self.started):
            self.started = started
        if ended is not None and (self.ended is None or ended > self.ended):
            self.ended = ended
        is_root = sp.parent_span_id is None
        if failed and (is_root or kind == "agent"):
            self.failed = True
        rank = 2 if is_root else 1 if kind == "agent" else 0
        attrs, res = sp.attributes, sp.resource
        if rank > self.rank or (rank == self.rank and sp.start_ns < self.rank_start):
            self.rank, self.rank_start = rank, sp.start_ns
            agent = attrs.get("gen_ai.agent.name") or res.get("service.name") or ""
            version = attrs.get("gen_ai.agent.version") or res.get("service.version") or ""
            self.agent, self.agent_version = str(agent)[:128], str(version)[:64]
        for column, key, limit in _TRACE_FIELDS:
            if key in attrs and (is_root or column not in self.fields):
                self.fields[column] = _text(attrs[key], limit)
        if "telltale.source" in attrs:
            if attrs["telltale.source"] in SOURCES:
                self.source = attrs["telltale.source"]
            else:
                out.note(f"span {sp.span_id}: telltale.source must be one of {SOURCES}; ignored")
        if not self.attributes:
            self.attributes = {f"resource.{k}": v for k, v in res.items()}

    def row(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "agent": self.agent,
            "agent_version": self.agent_version,
            "started_at": self.started,
            "ended_at": self.ended,
            "status": "error" if self.failed else "ok",
            "input_hash": self.fields.get("input_hash"),
            "entry_point": self.fields.get("entry_point"),
            "counterfactual_of": self.fields.get("counterfactual_of"),
            "source": self.source,
            "attributes": self.attributes,
            "rank": self.rank,
        }
