"""A trace holds at most max_spans_per_trace spans: the spans past the bound are refused by
name, in the native answer and in OTLP's partial_success, and the rest of the batch lands."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from sqlalchemy import Engine, func, select

from app.main import create_app
from app.models import Span
from app.settings import Settings
from tests.app.test_otlp_answers import PB, TRACE, request_pb
from tests.conftest import auth


@pytest.fixture
def small(settings: Settings) -> Iterator[TestClient]:
    bounded = settings.model_copy(update={"max_spans_per_trace": 5})
    with TestClient(create_app(bounded, start_background=False)) as c:
        yield c


def _spans(trace: str, ids: range) -> list[dict[str, Any]]:
    return [
        {"id": f"{trace}-{i}", "type": "span",
         "body": {"trace_id": trace, "span_id": f"s{i}", "kind": "tool", "name": "lookup"}}
        for i in ids
    ]  # fmt: skip


def _stored(engine: Engine, trace: str) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(select(func.count()).where(Span.trace_id == trace)) or 0)


def test_native_spans_past_the_bound_are_refused_by_name(
    small: TestClient, make_key: Any, engine: Engine
) -> None:
    key = auth(make_key("ingest"))
    events = _spans("big", range(8)) + _spans("small", range(2))
    answer = small.post("/api/v1/ingest", json={"events": events}, headers=key).json()
    assert answer["accepted"] == 7
    refused = answer["rejected"]
    assert [r["index"] for r in refused] == [5, 6, 7]
    assert "trace 'big' holds 5 spans already" in refused[0]["error"]
    assert refused[0]["error"].startswith("events[5]")
    # the trace stays full in a later batch; another trace does not mind
    later = small.post("/api/v1/ingest", json={"events": _spans("big", range(8, 10))
                                               + _spans("small", range(2, 5))}, headers=key)  # fmt: skip
    assert later.json()["accepted"] == 3 and len(later.json()["rejected"]) == 2
    assert _stored(engine, "big") == 5 and _stored(engine, "small") == 5


def test_otlp_spans_past_the_bound_are_partial_success(
    small: TestClient, make_key: Any, engine: Engine
) -> None:
    ids = [bytes([0, 0, 0, 0, 0, 0, 1, n]) for n in range(7)]
    r = small.post(
        "/v1/traces", content=request_pb(ids), headers={**auth(make_key("ingest")), **PB}
    )
    assert r.status_code == 200
    answer = ExportTraceServiceResponse.FromString(r.content)
    assert answer.partial_success.rejected_spans == 2
    message = answer.partial_success.error_message
    assert f"trace {TRACE.hex()} holds 5 spans" in message and "2 span(s) refused" in message
    assert _stored(engine, TRACE.hex()) == 5
