"""OTLP/HTTP answers, in the encoding of the request.

Success is an ``Export{Trace,Logs,Metrics}ServiceResponse`` (``partial_success`` set when
spans / log records / data points were refused or a warning is due). Failures carry a ``google.rpc.Status``: the message is
three fields, so it is encoded here by hand rather than pulling in googleapis protos.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from starlette.responses import Response

PROTOBUF_TYPE = "application/x-protobuf"
JSON_TYPE = "application/json"

# HTTP status -> google.rpc.Code, as gRPC-HTTP gateways map them.
_RPC_CODES = {400: 3, 401: 16, 403: 7, 404: 5, 413: 8, 415: 3, 429: 8, 503: 14}


def wire_format(content_type: str | None) -> str | None:
    """``protobuf`` / ``json`` from a Content-Type header, ``None`` when unsupported."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in ("application/x-protobuf", "application/protobuf"):
        return "protobuf"
    if media == "application/json":
        return "json"
    return None


def export_response(*, wire: str, rejected_spans: int, error_message: str) -> Response:
    message = ExportTraceServiceResponse()
    return _partial(message, "rejected_spans", rejected_spans, error_message, wire)


def logs_response(*, wire: str, rejected: int, error_message: str) -> Response:
    message = ExportLogsServiceResponse()
    return _partial(message, "rejected_log_records", rejected, error_message, wire)


def _partial(message: Any, counted: str, rejected: int, error_message: str, wire: str) -> Response:
    """``message`` with ``partial_success`` (``counted`` refused, and why) set only when
    items were refused or a warning is due: an empty one means full success."""
    if rejected or error_message:
        setattr(message.partial_success, counted, rejected)
        message.partial_success.error_message = error_message
    return _encode(message, wire)


def metrics_response(*, wire: str) -> Response:
    return _encode(ExportMetricsServiceResponse(), wire)


def _encode(message: Message, wire: str) -> Response:
    if wire == "protobuf":
        return Response(message.SerializeToString(), media_type=PROTOBUF_TYPE)
    body = json_format.MessageToJson(message, indent=None)
    return Response(body, media_type=JSON_TYPE)


def status_response(
    *, wire: str | None, status: int, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    code = _RPC_CODES.get(status, 2)
    if wire == "protobuf":
        return Response(
            rpc_status_bytes(code, message),
            status_code=status,
            media_type=PROTOBUF_TYPE,
            headers=headers,
        )
    return Response(
        orjson.dumps({"code": code, "message": message}),
        status_code=status,
        media_type=JSON_TYPE,
        headers=headers,
    )


def rpc_status_bytes(code: int, message: str) -> bytes:
    """``google.rpc.Status{code=1: int32, message=2: string}`` in protobuf wire format."""
    out = bytearray()
    if code:
        out += b"\x08" + _varint(code)
    text = message.encode("utf-8")
    if text:
        out += b"\x12" + _varint(len(text)) + text
    return bytes(out)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
