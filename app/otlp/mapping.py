"""Map decoded OTLP spans onto Telltale span, score and trace rows.

Conventions read, first match wins:

- span kind: ``gen_ai.operation.name`` (OpenTelemetry GenAI), ``openinference.span.kind``
  (OpenInference / Phoenix), ``traceloop.span.kind`` and ``llm.request.type`` (OpenLLMetry),
  then any ``gen_ai.system`` / ``gen_ai.provider.name`` means an LLM call; else ``step``;
- agent: the outermost agent span's own name (:func:`app.otlp.trace_rows.agent_identity`), else a workflow's,
  else the resource's ``service.name`` / ``service.version``;
- session and user: :mod:`app.ingest.session_ids` (the root span's, else any span's,
  a span's own before its resource's);
- tool: only a tool span names one (an LLM span's ``gen_ai.tool.name`` lists tools offered);
  the calls an LLM span requested are read from its messages
  (:mod:`app.otlp.message_tool_calls`);
- models, tokens, cost and error types under one name each (:mod:`app.otlp.normalise`);
- ``telltale.*`` extras (docs/guides/otlp.md) fill trace and span
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

from app.ingest.events import SCORE_KINDS, SCORE_SOURCES, ValidEvent
from app.ingest.limits import IngestLimits
from app.ingest.score_values import OUT_OF_RANGE, score_value
from app.ingest.session_ids import SESSION_KEYS, USER_KEYS, first_id
from app.otlp.decode import STATUS_ERROR, DecodedSpan
from app.otlp.evals import EVALUATION_PREFIXES, evaluation_scores
from app.otlp.message_tool_calls import FLAT_PREFIXES, add_tool_calls
from app.otlp.normalise import NO_COLUMNS, columns, error_type, latency_ms, normalise
from app.otlp.trace_rows import NO_IDS, TraceAcc, given

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
_TELLTALE = "telltale."
_MARKED_PREFIXES = (_TELLTALE, *FLAT_PREFIXES, *EVALUATION_PREFIXES)
_MODEL_KINDS = ("llm", "embedding")
_SCORE_PREFIX = "telltale.score."
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_MESSAGES = 10
# Attribute keys are names, as native ones are (docs: native-api, 128 characters).
# A longer key is refused with its span: the flat-message parsers read numbers out of keys,
# and nothing an instrumentation names is that long.
MAX_KEY_CHARS = 128


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
    # Integer microseconds: a float of epoch seconds would round them. Positional
    # (days, seconds, microseconds): keyword parsing costs a third of the call.
    return _EPOCH + timedelta(0, 0, ns // 1000) if ns > 0 else None


def _text(value: Any, limit: int) -> str | None:
    if value is None or value == "":
        return None
    return str(value)[:limit]


def _long_key(attrs: dict[str, Any]) -> str | None:
    """The first key over :data:`MAX_KEY_CHARS`, if any (one pass; keys are short)."""
    for key in attrs:
        if len(key) > MAX_KEY_CHARS:
            return key
    return None


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
    traces: dict[str, TraceAcc] = {}
    # Whether a resource (one dict per ResourceSpans) sets telltale.* values: most don't,
    # and a span without telltale.* keys of its own then skips those lookups.
    # ... and the session and user it names (app.ingest.session_ids), read once with it.
    resource_says: dict[int, tuple[bool, tuple[str | None, str | None]]] = {}
    for index, sp in enumerate(spans):
        if sp.error is not None:
            out.rejected += 1
            out.note(f"span {index} ({sp.name[:60]!r}): {sp.error}")
            continue
        attrs = sp.attributes
        long_key = _long_key(attrs) or _long_key(sp.resource)
        if long_key is not None:
            out.rejected += 1
            out.note(
                f"span {index} ({sp.name[:60]!r}): attribute key {long_key[:40]!r}... is "
                f"{len(long_key)} characters; the limit is {MAX_KEY_CHARS}"
            )
            continue
        kind = span_kind(attrs)
        # One pass over the keys finds every prefixed key read below (most spans have
        # none), so telltale.*, tool-call and evaluation parsing cost nothing without them.
        marked = [k for k in attrs if k.startswith(_MARKED_PREFIXES)]
        telltale_keys = [k for k in marked if k.startswith(_TELLTALE)] if marked else marked
        failed = sp.status_code == STATUS_ERROR or attrs.get("error.type") not in (None, "")
        if kind == "llm":
            add_tool_calls(attrs, flat=[k for k in marked if k.startswith(FLAT_PREFIXES)])
        started = ns_to_datetime(sp.start_ns)
        ended = ns_to_datetime(sp.end_ns)
        attributes = normalise(attrs, sp, kind)  # after add_tool_calls, before columns()
        # Measured as stored (the events are in it now); the store copies these bytes.
        attributes_json = orjson.dumps(attributes)
        if len(attributes_json) > max_attributes_bytes:
            out.rejected += 1
            out.note(
                f"span {index} ({sp.name[:60]!r}): attributes: {len(attributes_json)} bytes "
                f"as JSON exceed the limit of {max_attributes_bytes}"
            )
            continue
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
            "step_index": _step_index(sp, out) if telltale_keys else None,
            "confidence": _confidence(sp, out) if telltale_keys else None,
            "attributes": attributes,
            "latency_ms": latency_ms(sp.start_ns, sp.end_ns),
            **(columns(attributes) if kind in _MODEL_KINDS else NO_COLUMNS),
        }
        out.events.append(
            ValidEvent(
                index,
                f"otlp:{sp.trace_id}:{sp.span_id}",
                "span",
                row,
                attributes_json=attributes_json,
            )
        )
        if telltale_keys:
            _scores(sp, telltale_keys, index, ended or started, out)
        known = resource_says.get(id(sp.resource))
        if known is None:
            res = sp.resource
            named = (first_id(res, SESSION_KEYS), first_id(res, USER_KEYS))
            known = resource_says[id(res)] = (
                any(k.startswith(_TELLTALE) for k in res),
                NO_IDS if named == NO_IDS else named,  # NO_IDS itself: TraceAcc tests identity
            )
        says, resource_ids = known
        if sp.events or (marked and "openinference.span.kind" in attrs):
            out.events.extend(
                evaluation_scores(sp, index, ended or started, keys=marked, note=out.note)
            )
        acc = traces.get(sp.trace_id)
        if acc is None:
            acc = traces[sp.trace_id] = TraceAcc(sp.trace_id)
        telltale = says or bool(telltale_keys)
        ignored = acc.add(
            sp, kind, failed, started, ended, telltale=telltale, resource_ids=resource_ids
        )
        if ignored is not None:
            out.note(ignored)
    out.traces = [acc.row() for acc in traces.values()]
    return out


def _step_index(sp: DecodedSpan, out: MappedBatch) -> int | None:
    value = sp.attributes.get("telltale.step_index")
    if value is None:
        return None
    number = _number(value)
    if number is None or number != int(number) or not 0 <= number < 2**31:
        out.note(f"span {sp.span_id}: telltale.step_index must be an integer >= 0; ignored")
        return None
    return int(number)


def _confidence(sp: DecodedSpan, out: MappedBatch) -> float | None:
    value = sp.attributes.get("telltale.confidence")
    if value is None:
        return None
    number = _number(value)
    if number is None or not 0.0 <= number <= 1.0:
        out.note(f"span {sp.span_id}: telltale.confidence must be a number in [0, 1]; ignored")
        return None
    return number


def _scores(
    sp: DecodedSpan, keys: list[str], index: int, at: datetime | None, out: MappedBatch
) -> None:
    """The span's ``telltale.score.<name>`` attributes (``keys``: its telltale.* keys)."""
    for key in keys:
        if not key.startswith(_SCORE_PREFIX):
            continue
        value = sp.attributes[key]
        name = key[len(_SCORE_PREFIX) :]
        if name.endswith((".kind", ".source")):
            continue
        where = f"span {sp.span_id}: {key}"
        number = score_value(value)
        if number is None or not name or len(name) > 128:
            out.note(f"{where}: {OUT_OF_RANGE} and the name 1-128 characters; ignored")
            continue
        kind = given(f"{key}.kind", sp.attributes, sp.resource) or "proxy"
        source = given(f"{key}.source", sp.attributes, sp.resource) or "online"
        if kind not in SCORE_KINDS or source not in SCORE_SOURCES:
            out.note(f"{where}: .kind must be one of {SCORE_KINDS}, .source one of {SCORE_SOURCES}")
            continue
        row: dict[str, Any] = {
            "trace_id": sp.trace_id,
            "name": name,
            "value": number,
            "kind": kind,
            "source": source,
            "label": None,
            "explanation": None,
        }
        if at is not None:
            row["created_at"] = at
        event_id = f"otlp:{sp.trace_id}:{sp.span_id}:score:{name}"
        out.events.append(ValidEvent(index, event_id, "score", row))
