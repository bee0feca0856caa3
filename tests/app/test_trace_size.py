"""A trace holds at most max_spans_per_trace spans: the spans past the bound are refused by
name, in the native answer and in OTLP's partial_success, and the rest of the batch lands."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from sqlalchemy import Engine, func, select

from app.ingest.events import validate_events
from app.ingest.store import WriteResult, write_events
from app.main import create_app
from app.models import Span, Trace
from app.settings import Settings
from tests.app.engine_helpers import setup_project
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


def _write(engine: Engine, project_id: int, events: list[dict[str, Any]]) -> WriteResult:
    valid, rejected = validate_events(events)
    assert not rejected, rejected
    return write_events(engine, project_id=project_id, events=valid)


def _counts(engine: Engine) -> tuple[dict[str, int], dict[str, int]]:
    """Each trace row's span_count, and the span rows stored per trace."""
    with engine.connect() as conn:
        kept = {t: n for t, n in conn.execute(select(Trace.trace_id, Trace.span_count))}
        rows = select(Span.trace_id, func.count()).group_by(Span.trace_id)
        return kept, {t: n for t, n in conn.execute(rows)}


def _resent(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same spans under new event ids."""
    return [{**ev, "id": f"again-{ev['id']}"} for ev in events]


def test_span_count_counts_the_spans_stored_resent_or_not(engine: Engine) -> None:
    pid = setup_project(engine)
    # spans before their trace row: counted from the spans until the row comes
    first = _spans("t1", range(3)) + _spans("t2", range(2))
    assert _write(engine, pid, first).accepted == 5
    assert _counts(engine) == ({}, {"t1": 3, "t2": 2})
    # the row arrives with two new spans and one stored already, under a new event id
    t1 = {"id": "t1-row", "type": "trace", "body": {"trace_id": "t1", "agent": "bot"}}
    result = _write(engine, pid, [t1, *_resent(_spans("t1", range(2, 5)))])
    assert (result.accepted, result.duplicates) == (3, 1)
    assert _counts(engine) == ({"t1": 5}, {"t1": 5, "t2": 2})
    # a batch sent again changes nothing
    assert _write(engine, pid, first).duplicates == 5
    assert _write(engine, pid, _resent(first)).duplicates == 5
    assert _counts(engine) == ({"t1": 5}, {"t1": 5, "t2": 2})
    # a span twice in one batch under two ids, beside a trace with a row and a score
    twice = _spans("t2", range(2, 4))
    score = {"id": "q", "type": "score", "body": {"trace_id": "t1", "name": "q", "value": 1}}
    result = _write(engine, pid, [*_spans("t1", range(5, 7)), *twice, *_resent(twice), score])
    assert (result.accepted, result.duplicates) == (5, 2)
    assert _counts(engine) == ({"t1": 7}, {"t1": 7, "t2": 4})
    # t2's row comes last, with one more span: it starts from the four stored
    t2 = {"id": "t2-row", "type": "trace", "body": {"trace_id": "t2"}}
    _write(engine, pid, [t2, *_spans("t2", range(4, 5))])
    assert _counts(engine) == ({"t1": 7, "t2": 5}, {"t1": 7, "t2": 5})


def test_otlp_span_count_is_the_spans_stored(
    small: TestClient, make_key: Any, engine: Engine
) -> None:
    key = {**auth(make_key("ingest")), **PB}
    ids = [bytes([0, 0, 0, 0, 0, 0, 2, n]) for n in range(7)]
    # 2, then nothing (sent again), then 3 of 5 new ones: the trace holds 5 at most
    for body in (request_pb(ids[:2]), request_pb(ids[:2]), request_pb(ids[2:])):
        assert small.post("/v1/traces", content=body, headers=key).status_code == 200
    assert _counts(engine) == ({TRACE.hex(): 5}, {TRACE.hex(): 5})
