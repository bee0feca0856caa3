"""Decode an OTLP ``ExportTraceServiceRequest`` (protobuf or OTLP JSON) into plain spans.

Both encodings end up as the same :class:`DecodedSpan` records, so the mapping to
Telltale rows is written once. Ids become lower-case hex; OTLP JSON should carry hex ids,
but some exporters send the proto3-JSON base64 form, so both are accepted (the lengths
never collide: 32/16 hex characters against 24/12 base64 characters). A span with a bad
id, or an attribute value nesting more than ``max_depth`` arrays/maps, is not an error of
the whole request: it carries ``error`` and is refused alone (OTLP partial success). A
body that is not an ``ExportTraceServiceRequest`` at all raises :class:`MalformedBody` (400).

Strings are kept, sanitised rather than refused (an exporter cannot fix a span's text): NUL
and lone UTF-16 surrogates, which no store can hold, become U+FFFD. Non-finite doubles
become their text, as JSON has no NaN or infinity.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1 import trace_pb2

STATUS_ERROR = 2
_INT64 = (-(2**63), 2**63 - 1)
_INT_TEXT = re.compile(r"-?[0-9]{1,20}")
_UINT_TEXT = re.compile(r"[0-9]{1,20}")
_ID_BYTES = {"trace_id": 16, "span_id": 8, "parent_span_id": 8}
_SURROGATE = re.compile("[\ud800-\udfff]")
DEFAULT_MAX_DEPTH = 32


class MalformedBody(ValueError):
    """The body is not a valid ExportTraceServiceRequest; the message names where."""


class _TooDeep(Exception):
    """An attribute value nests too deeply; ``path`` is its key path, built on the way out."""

    def __init__(self, path: str = "") -> None:
        self.path = path


@dataclass(slots=True)
class DecodedSpan:
    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int
    start_ns: int
    end_ns: int
    status_code: int
    status_message: str
    attributes: dict[str, Any]
    resource: dict[str, Any]
    scope: str
    events: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


def clean(text: str) -> str:
    # PostgreSQL text and JSONB refuse NUL; UTF-8 cannot encode a lone surrogate (only
    # OTLP JSON can carry one, as a "\\ud800" escape). Keep the rest of the value.
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    if not text.isascii() and _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
    return text


def _too_deep(exc: _TooDeep, where: str, max_depth: int) -> str:
    return f"{where}{exc.path}: nests arrays/maps more than {max_depth} deep"


def _finite(value: float) -> float | str:
    # JSON (and JSONB) have no NaN or infinity: keep such doubles as their text.
    return value if math.isfinite(value) else str(value)


def _hex_id(raw: bytes, name: str) -> tuple[str, str | None]:
    """``(hex, error)``; an all-zero or wrong-length id is invalid per the OTLP spec."""
    if len(raw) != _ID_BYTES[name]:
        return raw.hex(), f"{name} must be {_ID_BYTES[name]} bytes, got {len(raw)}"
    if not any(raw):
        return raw.hex(), f"{name} is all zeros"
    return raw.hex(), None


# --- protobuf ---------------------------------------------------------------------------


def decode_protobuf(body: bytes, *, max_depth: int = DEFAULT_MAX_DEPTH) -> list[DecodedSpan]:
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise MalformedBody(f"body is not a protobuf ExportTraceServiceRequest: {exc}") from None
    spans: list[DecodedSpan] = []
    for rs in request.resource_spans:
        resource_error = None
        try:
            resource = _pb_attrs(rs.resource.attributes, max_depth)
        except _TooDeep as exc:
            resource, resource_error = {}, _too_deep(exc, "resource.attributes", max_depth)
        for ss in rs.scope_spans:
            scope = clean(ss.scope.name)
            for sp in ss.spans:
                trace_id, err = _hex_id(sp.trace_id, "trace_id")
                span_id, span_err = _hex_id(sp.span_id, "span_id")
                parent: str | None = None
                if sp.parent_span_id:
                    parent, parent_err = _hex_id(sp.parent_span_id, "parent_span_id")
                    span_err = span_err or parent_err
                attributes, events, attr_err = _pb_span_attrs(sp, max_depth)
                spans.append(
                    DecodedSpan(
                        trace_id=trace_id,
                        span_id=span_id,
                        parent_span_id=parent,
                        name=clean(sp.name),
                        kind=sp.kind,
                        start_ns=sp.start_time_unix_nano,
                        end_ns=sp.end_time_unix_nano,
                        status_code=sp.status.code,
                        status_message=clean(sp.status.message),
                        attributes=attributes,
                        resource=resource,
                        scope=scope,
                        events=events,
                        error=err or span_err or resource_error or attr_err,
                    )
                )
    return spans


def _pb_span_attrs(
    sp: Any, max_depth: int
) -> tuple[dict[str, Any], list[dict[str, Any]], str | None]:
    """The span's attributes and events, or ``({}, [], error)`` when a value nests too deeply."""
    try:
        attributes = _pb_attrs(sp.attributes, max_depth)
    except _TooDeep as exc:
        return {}, [], _too_deep(exc, "attributes", max_depth)
    events = []
    for n, ev in enumerate(sp.events):
        try:
            ev_attrs = _pb_attrs(ev.attributes, max_depth)
        except _TooDeep as exc:
            return {}, [], _too_deep(exc, f"events[{n}].attributes", max_depth)
        events.append(
            {"name": clean(ev.name), "time_unix_nano": ev.time_unix_nano, "attributes": ev_attrs}
        )
    return attributes, events, None


def _pb_attrs(kvs: Any, depth: int) -> dict[str, Any]:
    # The hot loop of the receiver (~15 attributes a span): strings and ints inline.
    # ``depth``: how many more arrays/maps may open below these values.
    out: dict[str, Any] = {}
    for kv in kvs:
        key = kv.key
        if "\x00" in key:
            key = clean(key)
        value = kv.value
        which = value.WhichOneof("value")
        if which == "string_value":
            text = value.string_value
            out[key] = clean(text) if "\x00" in text else text
        elif which == "int_value":
            out[key] = value.int_value
        else:
            try:
                out[key] = _pb_value(value, depth)
            except _TooDeep as exc:
                raise _TooDeep(f".{key[:64]}{exc.path}") from None
    return out


def _pb_value(v: Any, depth: int) -> Any:
    which = v.WhichOneof("value")
    if which == "string_value":
        return clean(v.string_value)
    if which == "int_value":
        return v.int_value
    if which == "bool_value":
        return v.bool_value
    if which == "double_value":
        return _finite(v.double_value)
    if which in ("array_value", "kvlist_value") and depth <= 0:
        raise _TooDeep()
    if which == "array_value":
        return [_pb_value(x, depth - 1) for x in v.array_value.values]
    if which == "kvlist_value":
        return _pb_attrs(v.kvlist_value.values, depth - 1)
    if which == "bytes_value":
        return base64.b64encode(v.bytes_value).decode("ascii")
    return None


# --- OTLP JSON --------------------------------------------------------------------------


def decode_json(body: bytes, *, max_depth: int = DEFAULT_MAX_DEPTH) -> list[DecodedSpan]:
    """OTLP JSON: lowerCamelCase keys (snake_case accepted too), enums as integers (names
    accepted too), 64-bit integers as numbers or strings, ids as hex (base64 accepted)."""
    doc = _loads(body)
    if not isinstance(doc, dict):
        raise MalformedBody("body: must be a JSON object (ExportTraceServiceRequest)")
    spans: list[DecodedSpan] = []
    for i, rs in enumerate(_list(doc, "resourceSpans", "resource_spans", "body")):
        p = f"resourceSpans[{i}]"
        res = _obj(rs, "resource", "resource", p)
        resource_error = None
        try:
            resource = _json_attrs(res, f"{p}.resource", max_depth)
        except _TooDeep as exc:
            resource, resource_error = {}, _too_deep(exc, "resource.attributes", max_depth)
        scope_spans = _list(rs, "scopeSpans", "scope_spans", p) or _list(
            rs, "instrumentationLibrarySpans", "instrumentation_library_spans", p
        )
        for j, ss in enumerate(scope_spans):
            q = f"{p}.scopeSpans[{j}]"
            scope = _str(_obj(ss, "scope", "scope", q), "name", "name", f"{q}.scope")
            for k, sp in enumerate(_list(ss, "spans", "spans", q)):
                span = _json_span(sp, resource, scope, f"{q}.spans[{k}]", max_depth)
                span.error = span.error or resource_error
                spans.append(span)
    return spans


def _loads(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        # orjson refuses lone surrogate escapes ("\\ud800"), which are valid JSON; the
        # standard parser keeps them and clean() replaces them.
        try:
            return json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise MalformedBody(f"body is not valid JSON: {exc}") from None


def _json_span(
    sp: Any, resource: dict[str, Any], scope: str, p: str, max_depth: int
) -> DecodedSpan:
    if not isinstance(sp, dict):
        raise MalformedBody(f"{p}: must be an object")
    trace_id, err = _json_id(sp, "traceId", "trace_id", p)
    span_id, span_err = _json_id(sp, "spanId", "span_id", p)
    parent: str | None = None
    if _get(sp, "parentSpanId", "parent_span_id", p):
        parent, parent_err = _json_id(sp, "parentSpanId", "parent_span_id", p)
        span_err = span_err or parent_err
    status = _obj(sp, "status", "status", p)
    attributes, events, attr_err = _json_span_attrs(sp, p, max_depth)
    return DecodedSpan(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=_str(sp, "name", "name", p),
        kind=_enum(sp, "kind", "kind", p, "SPAN_KIND_"),
        start_ns=_uint(sp, "startTimeUnixNano", "start_time_unix_nano", p),
        end_ns=_uint(sp, "endTimeUnixNano", "end_time_unix_nano", p),
        status_code=_enum(status, "code", "code", f"{p}.status", "STATUS_CODE_"),
        status_message=_str(status, "message", "message", f"{p}.status"),
        attributes=attributes,
        resource=resource,
        scope=scope,
        events=events,
        error=err or span_err or attr_err,
    )


def _json_span_attrs(
    sp: dict[str, Any], p: str, max_depth: int
) -> tuple[dict[str, Any], list[dict[str, Any]], str | None]:
    """The span's attributes and events, or ``({}, [], error)`` when a value nests too deeply."""
    try:
        attributes = _json_attrs(sp, p, max_depth)
    except _TooDeep as exc:
        return {}, [], _too_deep(exc, "attributes", max_depth)
    events = []
    for n, ev in enumerate(_list(sp, "events", "events", p)):
        q = f"{p}.events[{n}]"
        try:
            ev_attrs = _json_attrs(ev, q, max_depth)
        except _TooDeep as exc:
            return {}, [], _too_deep(exc, f"events[{n}].attributes", max_depth)
        events.append(
            {
                "name": _str(ev, "name", "name", q),
                "time_unix_nano": _uint(ev, "timeUnixNano", "time_unix_nano", q),
                "attributes": ev_attrs,
            }
        )
    return attributes, events, None


def _get(obj: Any, camel: str, snake: str, p: str) -> Any:
    if not isinstance(obj, dict):
        raise MalformedBody(f"{p}: must be an object")
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def _list(obj: Any, camel: str, snake: str, p: str) -> list[Any]:
    if not isinstance(obj, dict):
        raise MalformedBody(f"{p}: must be an object")
    value = _get(obj, camel, snake, p)
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedBody(f"{p}.{camel}: must be an array")
    return value


def _obj(obj: dict[str, Any], camel: str, snake: str, p: str) -> dict[str, Any]:
    value = _get(obj, camel, snake, p)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MalformedBody(f"{p}.{camel}: must be an object")
    return value


def _str(obj: dict[str, Any], camel: str, snake: str, p: str) -> str:
    value = _get(obj, camel, snake, p)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedBody(f"{p}.{camel}: must be a string")
    return clean(value)


def _uint(obj: dict[str, Any], camel: str, snake: str, p: str) -> int:
    value = _get(obj, camel, snake, p)
    if value is None:
        return 0
    if isinstance(value, str) and _UINT_TEXT.fullmatch(value):
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64:
        return value
    raise MalformedBody(f"{p}.{camel}: must be a non-negative integer (or its decimal string)")


def _enum(obj: dict[str, Any], camel: str, snake: str, p: str, prefix: str) -> int:
    value = _get(obj, camel, snake, p)
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        enum = trace_pb2.Span.SpanKind if prefix == "SPAN_KIND_" else trace_pb2.Status.StatusCode
        try:
            return int(enum.Value(value))
        except ValueError:
            pass
    raise MalformedBody(f"{p}.{camel}: unknown enum value {value!r}")


def _json_id(obj: dict[str, Any], camel: str, snake: str, p: str) -> tuple[str, str | None]:
    raw = _get(obj, camel, snake, p)
    name = snake
    size = _ID_BYTES[name]
    if raw is None or raw == "":
        return "", f"{name} is missing"
    if not isinstance(raw, str):
        raise MalformedBody(f"{p}.{camel}: must be a string")
    try:
        if len(raw) == 2 * size:
            data = bytes.fromhex(raw)
        else:
            data = _b64(raw)
    except (ValueError, binascii.Error):
        return raw[:64], f"{name} {raw[:40]!r} is neither {2 * size} hex digits nor base64"
    return _hex_id(data, name)


def _b64(raw: str) -> bytes:
    padded = raw + "=" * (-len(raw) % 4)
    altchars = b"-_" if ("-" in raw or "_" in raw) else None
    return base64.b64decode(padded, altchars=altchars, validate=True)


def _json_attrs(obj: dict[str, Any], p: str, depth: int) -> dict[str, Any]:
    # ``depth``: how many more arrays/maps may open below these values.
    out: dict[str, Any] = {}
    for n, kv in enumerate(_list(obj, "attributes", "attributes", p)):
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise MalformedBody(f"{p}.attributes[{n}]: must be an object with a string key")
        key = clean(kv["key"])
        try:
            out[key] = _json_value(kv.get("value"), f"{p}.attributes[{n}].value", depth)
        except _TooDeep as exc:
            raise _TooDeep(f".{key[:64]}{exc.path}") from None
    return out


def _json_value(v: Any, p: str, depth: int) -> Any:
    if v is None or v == {}:
        return None
    if not isinstance(v, dict) or len(v) != 1:
        raise MalformedBody(f"{p}: must be an AnyValue object with exactly one field")
    ((kind, value),) = v.items()
    if kind in ("stringValue", "string_value") and isinstance(value, str):
        return clean(value)
    if kind in ("boolValue", "bool_value") and isinstance(value, bool):
        return value
    if kind in ("intValue", "int_value"):
        if isinstance(value, str) and _INT_TEXT.fullmatch(value):
            value = int(value)
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and _INT64[0] <= value <= _INT64[1]
        ):
            return value
    if kind in ("doubleValue", "double_value"):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return _finite(float(value))
        if value in ("NaN", "Infinity", "-Infinity"):
            return value
    nested = kind in ("arrayValue", "array_value", "kvlistValue", "kvlist_value")
    if nested and isinstance(value, dict) and depth <= 0:
        raise _TooDeep()
    if kind in ("arrayValue", "array_value") and isinstance(value, dict):
        items = _list(value, "values", "values", p)
        return [
            _json_value(x, f"{p}.arrayValue.values[{n}]", depth - 1) for n, x in enumerate(items)
        ]
    if kind in ("kvlistValue", "kvlist_value") and isinstance(value, dict):
        return _json_attrs({"attributes": value.get("values") or []}, f"{p}.kvlistValue", depth - 1)
    if kind in ("bytesValue", "bytes_value") and isinstance(value, str):
        return clean(value)
    raise MalformedBody(f"{p}.{kind}: not a valid AnyValue field or value")
