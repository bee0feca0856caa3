"""Map decoded OTLP spans onto Telltale span, score and trace rows.

Conventions read, first match wins:

- span kind: ``gen_ai.operation.name`` (OpenTelemetry GenAI), ``openinference.span.kind``
  (OpenInference / Phoenix), ``traceloop.span.kind`` and ``llm.request.type`` (OpenLLMetry),
  then any ``gen_ai.system`` / ``gen_ai.provider.name`` means an LLM call; else ``step``;
- agent: the outermost agent span's own name (:func:`agent_identity`), else a workflow's,
  else the resource's ``service.name`` / ``service.version``;
- tool: only a tool span names one (an LLM span's ``gen_ai.tool.name`` lists tools offered);
  the calls an LLM span requested are read from its messages (:mod:`app.otlp.tool_calls`);
- models, tokens, cost and error types under one name each (:mod:`app.otlp.normalise`);
- ``telltale.*`` extras (README, "OpenTelemetry (OTLP) ingestion") fill trace and span
  columns and scores; trace-level ones may ride on the resource (``OTEL_RESOURCE_ATTRIBUTES``). A bad ``telltale.*`` value does not cost the span: the value is left
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
from app.otlp.normalise import columns, error_type, latency_ms, normalise
from app.otlp.tool_calls import add_tool_calls

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
        if kind == "llm":
            add_tool_calls(attrs)
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
            "error_type": error_type(sp),
            "started_at": started,
            "ended_at": ended,
            "step_index": _step_index(attrs, where, out),
            "confidence": _confidence(attrs, where, out),
            "attributes": normalise(attrs, sp),
            "latency_ms": latency_ms(sp.start_ns, sp.end_ns),
        }
        row.update(columns(attrs))
        out.events.append(ValidEvent(index, f"otlp:{sp.trace_id}:{sp.span_id}", "span", row))
        _scores(sp, index, ended or started, out)
        acc = traces.get(sp.trace_id)
        if acc is None:
            acc = traces[sp.trace_id] = _TraceAcc(sp.trace_id)
        acc.add(sp, kind, failed, started, ended, out)
    out.traces = [acc.row() for acc in traces.values()]
    return out


def _oversize(sp: DecodedSpan, limit: int) -> str | None:
    # Measured as stored: the attributes plus the events that normalise() adds to them.
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
        kind = _given(f"{key}.kind", sp.attributes, sp.resource) or "proxy"
        source = _given(f"{key}.source", sp.attributes, sp.resource) or "online"
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
# Trace attributes the detectors read (detectors/records.py).
_TRACE_ATTRIBUTES = (("decision", "telltale.decision"), ("task_type", "telltale.task_type"))
# Where the trace's agent comes from, best first; within one, the earliest start wins
# (an outer agent starts before the agents it calls). Merged across requests by the
# stored ``otel.agent_key`` (app.otlp.traces).
_AGENT_SPAN, _WORKFLOW_SPAN, _ROOT_SERVICE, _SERVICE = range(4)


def agent_identity(sp: DecodedSpan, kind: str) -> tuple[int, str, str]:
    """``(preference, name, version)``: an agent span's own name (``gen_ai.agent.name``,
    OpenInference ``agent.name`` or the AGENT span's name, OpenLLMetry
    ``traceloop.entity.name``), an OpenLLMetry workflow's name, else ``service.name``."""
    attrs, res = sp.attributes, sp.resource
    version = (
        attrs.get("gen_ai.agent.version")
        or attrs.get("telltale.agent_version")
        or res.get("telltale.agent_version")
        or res.get("service.version")
        or ""
    )
    name: Any = attrs.get("gen_ai.agent.name") or attrs.get("agent.name")
    tl_kind = attrs.get("traceloop.span.kind")
    if name is None and tl_kind in ("agent", "workflow"):
        name = attrs.get("traceloop.entity.name")
    if name is None and kind == "agent" and "openinference.span.kind" in attrs:
        name = sp.name
    if name:
        preference = _WORKFLOW_SPAN if tl_kind == "workflow" else _AGENT_SPAN
        return preference, str(name)[:128], str(version)[:64]
    preference = _ROOT_SERVICE if sp.parent_span_id is None else _SERVICE
    return preference, str(res.get("service.name") or "")[:128], str(version)[:64]


def _given(key: str, attrs: dict[str, Any], res: dict[str, Any]) -> Any:
    # A span's own telltale.* value beats its resource's (OTEL_RESOURCE_ATTRIBUTES).
    value = attrs.get(key)
    return res.get(key) if value is None else value


class _TraceAcc:
    """What one request says about one trace; merged into the stored row by traces.py."""

    def __init__(self, trace_id: str) -> None:
        self.trace_id = trace_id
        self.started: datetime | None = None
        self.ended: datetime | None = None
        self.failed = False
        # rank 2: the root span is here; 1: an agent span; 0: only other spans.
        self.rank = -1
        self.agent_key = ""
        self.agent = ""
        self.agent_version = ""
        self.fields: dict[str, Any] = {}
        self.source: str | None = None
        self.attributes: dict[str, Any] = {}
        self.has_resource = False

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
        self.rank = max(self.rank, 2 if is_root else 1 if kind == "agent" else 0)
        attrs, res = sp.attributes, sp.resource
        preference, agent, version = agent_identity(sp, kind)
        key = f"{preference}:{sp.start_ns:020d}:{sp.span_id}"
        if agent and (not self.agent_key or key < self.agent_key):
            self.agent_key, self.agent, self.agent_version = key, agent, version
            agent_id = attrs.get("gen_ai.agent.id")
            if agent_id is not None:
                self.attributes["gen_ai.agent.id"] = str(agent_id)[:128]
        for column, name, limit in _TRACE_FIELDS:
            value = _given(name, attrs, res)
            if value is not None and (is_root or column not in self.fields):
                self.fields[column] = _text(value, limit)
        for column, name in _TRACE_ATTRIBUTES:
            value = _given(name, attrs, res)
            if value is not None and (is_root or column not in self.attributes):
                self.attributes[column] = value
        source = _given("telltale.source", attrs, res)
        if source is not None:
            if source in SOURCES:
                self.source = source
            else:
                out.note(f"span {sp.span_id}: telltale.source must be one of {SOURCES}; ignored")
        if not self.has_resource:
            self.has_resource = True
            self.attributes.update({f"resource.{k}": v for k, v in res.items()})

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
            "attributes": {**self.attributes, "otel.agent_key": self.agent_key},
            "rank": self.rank,
        }
