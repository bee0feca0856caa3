"""Parse the OTLP log and metric envelopes, protobuf or JSON, into their protobuf messages.

Unlike traces (:mod:`app.otlp.decode_json`, hand-written for speed), these bodies go
through ``json_format``: they are rarer and mostly counted, not stored. OTLP JSON carries
hex ids where proto3 JSON wants base64, so hex ids are turned into base64 first; base64
ids pass as they are (the lengths never collide: 32/16 hex characters against 24/12).
"""

from __future__ import annotations

import base64
from typing import Any, TypeVar

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message

from app.otlp.decode import MalformedBody

M = TypeVar("M", bound=Message)
_ID_KEYS = {"traceId": 32, "spanId": 16, "trace_id": 32, "span_id": 16}


def parse_request(body: bytes, *, wire: str, message: type[M]) -> M:
    """:func:`parse_envelope`, with an empty body read as the spec has it.

    Zero bytes are the valid protobuf encoding of an empty Export*ServiceRequest (the
    OpenTelemetry Collector answers 200); for JSON they are no document at all.
    """
    if not body and wire == "protobuf":
        return message()
    if not body:
        raise MalformedBody(f"request body is empty; expected an {message.DESCRIPTOR.name}")
    return parse_envelope(body, wire=wire, message=message)


def parse_envelope(body: bytes, *, wire: str, message: type[M]) -> M:
    """The request as ``message``; :class:`MalformedBody` (a 400) when it is not one."""
    name = message.DESCRIPTOR.name
    out = message()
    if wire == "protobuf":
        try:
            out.ParseFromString(body)
        except (DecodeError, RuntimeError, ValueError) as exc:
            raise MalformedBody(f"body is not a protobuf {name}: {exc}") from None
        return out
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MalformedBody(f"body is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise MalformedBody(f"body: must be a JSON object ({name})")
    try:
        json_format.ParseDict(_hex_ids_to_base64(doc), out, ignore_unknown_fields=True)
    except (json_format.ParseError, RecursionError, ValueError) as exc:
        raise MalformedBody(f"body is not an OTLP JSON {name}: {str(exc)[:300]}") from None
    return out


def _hex_ids_to_base64(node: Any) -> Any:
    if isinstance(node, list):
        return [_hex_ids_to_base64(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if isinstance(value, str) and len(value) == _ID_KEYS.get(key, -1):
            try:
                value = base64.b64encode(bytes.fromhex(value)).decode("ascii")
            except ValueError:
                pass  # not hex: left for json_format to read as base64 (or refuse)
        elif isinstance(value, dict | list):
            value = _hex_ids_to_base64(value)
        out[key] = value
    return out
