"""How the OTLP/HTTP receivers describe themselves in ``/openapi.json``.

Their bodies are read raw (protobuf or OTLP/JSON, gzip allowed), so FastAPI cannot infer
a schema; each receiver states both encodings of its request and answer here, once.
"""

from __future__ import annotations

from typing import Any

_PROTOBUF = {"schema": {"type": "string", "format": "binary"}}


def otlp_operation(*, signal: str, items: str, rejected: str) -> dict[str, Any]:
    """``responses`` and ``openapi_extra`` for the receiver of one signal.

    >>> sorted(otlp_operation(signal="Logs", items="resourceLogs", rejected="rejectedLogRecords"))
    ['openapi_extra', 'responses']
    """
    request = {
        "type": "object",
        "description": f"Export{signal}ServiceRequest in OTLP/JSON",
        "properties": {items: {"type": "array", "items": {"type": "object"}}},
    }
    answer: dict[str, Any] = {
        "type": "object",
        "description": f"Export{signal}ServiceResponse; partialSuccess when items were refused",
        "properties": {
            "partialSuccess": {
                "type": "object",
                "properties": {
                    rejected: {"type": "string", "description": "int64, as OTLP/JSON writes it"},
                    "errorMessage": {"type": "string"},
                },
            }
        },
    }
    return {
        "responses": {
            200: {
                "content": {
                    "application/x-protobuf": _PROTOBUF,
                    "application/json": {"schema": answer},
                }
            }
        },
        "openapi_extra": {
            "requestBody": {
                "required": True,
                "content": {
                    "application/x-protobuf": _PROTOBUF,
                    "application/json": {"schema": request},
                },
            }
        },
    }
