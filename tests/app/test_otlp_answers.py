"""OTLP/HTTP answers: partial success, 400/413/415/429/401, in the request's encoding."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from sqlalchemy import Engine, func, select

from app.admission import Overloaded
from app.main import create_app
from app.models import IngestEvent, Score, Span, Trace
from app.settings import Settings
from tests.conftest import auth

PB = {"Content-Type": "application/x-protobuf"}
JS = {"Content-Type": "application/json"}
TRACE = bytes.fromhex("5b8efff798038103d269b633813fc60c")


def request_pb(span_ids: list[bytes], trace_id: bytes = TRACE) -> bytes:
    req = ExportTraceServiceRequest()
    scope = req.resource_spans.add().scope_spans.add()
    for n, span_id in enumerate(span_ids):
        sp = scope.spans.add()
        sp.trace_id, sp.span_id, sp.name = trace_id, span_id, f"s{n}"
        sp.start_time_unix_nano = 1_700_000_000_000_000_000 + n
        kv = sp.attributes.add()
        kv.key, kv.value.double_value = "telltale.score.quality", 0.5
    return req.SerializeToString()


def stored(engine: Engine) -> list[int]:
    with engine.connect() as conn:
        return [
            int(conn.scalar(select(func.count()).select_from(m)) or 0)
            for m in (Trace, Span, Score, IngestEvent)
        ]


def test_partial_success_protobuf(client: TestClient, make_key: Any, engine: Engine) -> None:
    good = bytes.fromhex("eee19b7ec3c1b174")
    body = request_pb([good, b"\x01\x02\x03\x04"]) + request_pb([good], trace_id=bytes(16))
    r = client.post("/v1/traces", content=body, headers={**auth(make_key("ingest")), **PB})
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/x-protobuf"
    answer = ExportTraceServiceResponse.FromString(r.content)
    assert answer.partial_success.rejected_spans == 2
    assert "span_id must be 8 bytes" in answer.partial_success.error_message
    assert "trace_id is all zeros" in answer.partial_success.error_message
    # One event id: the score's. A span's identity is its key, it claims no event id.
    assert stored(engine) == [1, 1, 1, 1]


def test_partial_success_json_and_warnings(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    spans = [
        {"traceId": TRACE.hex(), "name": "no id"},
        {
            "traceId": TRACE.hex(),
            "spanId": "eee19b7ec3c1b174",
            "attributes": [{"key": "telltale.confidence", "value": {"stringValue": "high"}}],
        },
    ]
    body = orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})
    r = client.post("/v1/traces", content=body, headers={**auth(make_key("ingest")), **JS})
    assert r.status_code == 200
    partial = r.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1"
    assert "span_id is missing" in partial["errorMessage"]
    assert "telltale.confidence" in partial["errorMessage"]
    assert stored(engine)[:2] == [1, 1]


def test_malformed_bodies_get_400_and_write_nothing(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key = auth(make_key("ingest"))
    valid = request_pb([bytes.fromhex("eee19b7ec3c1b174")])
    r = client.post("/v1/traces", content=valid[:-3], headers={**key, **PB})
    assert r.status_code == 400
    status = status_pb2.Status.FromString(r.content)
    assert status.code == 3 and "ExportTraceServiceRequest" in status.message
    for body in (b'{"resourceSpans": [', b'{"resourceSpans": [{"scopeSpans": 7}]}', b""):
        r = client.post("/v1/traces", content=body, headers={**key, **JS})
        assert r.status_code == 400, body
        assert r.json()["code"] == 3
    r = client.post(
        "/v1/traces", content=b"not gzip", headers={**key, **PB, "Content-Encoding": "gzip"}
    )
    assert r.status_code == 400
    assert stored(engine) == [0, 0, 0, 0]


@pytest.mark.parametrize("path", ["/v1/traces", "/v1/logs", "/v1/metrics"])
def test_a_zero_length_protobuf_export_is_an_empty_request_answered_200(
    client: TestClient, make_key: Any, engine: Engine, path: str
) -> None:
    # Zero bytes decode as an empty Export*ServiceRequest (the Collector answers 200);
    # a zero-length JSON body is no document and stays a 400.
    key = auth(make_key("ingest"))
    r = client.post(path, content=b"", headers={**key, **PB})
    assert r.status_code == 200, r.content
    assert r.headers["content-type"] == PB["Content-Type"] and r.content == b""
    r = client.post(path, content=b"", headers={**key, **JS})
    assert r.status_code == 400 and "empty" in r.json()["message"]
    assert stored(engine) == [0, 0, 0, 0]


def test_unsupported_content_type_is_415(client: TestClient, make_key: Any) -> None:
    r = client.post(
        "/v1/traces",
        content=b"x",
        headers={**auth(make_key("ingest")), "Content-Type": "text/plain"},
    )
    assert r.status_code == 415
    r = client.post(
        "/v1/traces",
        content=b"x",
        headers={**auth(make_key("ingest")), **PB, "Content-Encoding": "br"},
    )
    assert r.status_code == 415


def test_too_big_is_413_before_and_after_gzip(settings: Settings, make_key: Any) -> None:
    small = settings.model_copy(update={"max_request_bytes": 4096, "max_events_per_batch": 3})
    with TestClient(create_app(small, start_background=False)) as c:
        key = auth(make_key("ingest"))
        r = c.post("/v1/traces", content=b"\x00" * 5000, headers={**key, **PB})
        assert r.status_code == 413
        assert status_pb2.Status.FromString(r.content).code == 8
        bomb = gzip.compress(b"\x00" * 100_000)
        r = c.post("/v1/traces", content=bomb, headers={**key, **PB, "Content-Encoding": "gzip"})
        assert r.status_code == 413
        four = request_pb([bytes([i + 1]) * 8 for i in range(4)])
        r = c.post("/v1/traces", content=four, headers={**key, **PB})
        assert r.status_code == 413


class _Saturated:
    depth = 0

    @asynccontextmanager
    async def slot(self, tenant: object = None) -> AsyncIterator[None]:
        raise Overloaded(7)
        yield


def test_saturation_is_429_with_retry_after(client: TestClient, make_key: Any) -> None:
    client.app.state.admission = _Saturated()  # type: ignore[attr-defined]
    body = request_pb([bytes.fromhex("eee19b7ec3c1b174")])
    r = client.post("/v1/traces", content=body, headers={**auth(make_key("ingest")), **PB})
    assert r.status_code == 429
    assert r.headers["retry-after"] == "7"
    assert status_pb2.Status.FromString(r.content).code == 8


def test_missing_key_is_401(client: TestClient) -> None:
    r = client.post("/v1/traces", content=request_pb([b"\x01" * 8]), headers=PB)
    assert r.status_code == 401


@pytest.mark.parametrize("path", ["/v1/traces", "/v1/logs", "/v1/metrics"])
def test_bad_key_is_a_google_rpc_status_in_the_request_encoding(
    client: TestClient, path: str
) -> None:
    bad = {"Authorization": "Bearer tt_not-a-key"}
    r = client.post(path, content=b"\x0a\x00", headers={**PB, **bad})
    assert r.status_code == 401 and r.headers["content-type"] == "application/x-protobuf"
    status = status_pb2.Status.FromString(r.content)
    assert status.code == 16 and status.message  # UNAUTHENTICATED
    r = client.post(path, content=b"{}", headers={"Content-Type": "application/json", **bad})
    assert r.status_code == 401 and r.headers["content-type"] == "application/json"
    assert orjson.loads(r.content)["code"] == 16
    # Other routes keep FastAPI's JSON error.
    r = client.get("/api/v1/traces", headers=bad)
    assert r.status_code == 401 and "detail" in r.json()
