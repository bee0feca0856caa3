"""OTLP input no store can hold: sanitised text, and over-deep or over-large attributes
refused per span (partial success), in protobuf and JSON, never a 500 or a 503."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from app.main import create_app
from app.settings import Settings
from tests.conftest import auth

TRACE = "5b8efff798038103d269b633813fc60c"
GOOD, BAD = "eee19b7ec3c1b174", "eee19b7ec3c1b175"
PB = {"Content-Type": "application/x-protobuf"}
JS = {"Content-Type": "application/json"}


def json_span(span_id: str, attributes: list[dict[str, Any]], **over: Any) -> dict[str, Any]:
    return {
        "traceId": TRACE,
        "spanId": span_id,
        "name": "step",
        "startTimeUnixNano": "1700000000000000000",
        "attributes": attributes,
        **over,
    }


def json_body(*spans: dict[str, Any], resource: list[dict[str, Any]] | None = None) -> str:
    doc = {
        "resourceSpans": [
            {"resource": {"attributes": resource or []}, "scopeSpans": [{"spans": list(spans)}]}
        ]
    }
    return json.dumps(doc)  # the standard writer: lone surrogates go out as \ud800 escapes


def kvlist(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"intValue": 1}
    for _ in range(depth):
        value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
    return value


def partial(r: Any) -> tuple[int, str]:
    assert r.status_code == 200, r.text
    answer = orjson.loads(r.content).get("partialSuccess", {})
    return int(answer.get("rejectedSpans", 0)), answer.get("errorMessage", "")


def stored_spans(client: TestClient, make_key: Any) -> dict[str, Any]:
    r = client.get(f"/api/v1/traces/{TRACE}", headers=auth(make_key("read")))
    assert r.status_code == 200, r.text
    return {s["span_id"]: s for s in r.json()["spans"]}


def test_nul_and_lone_surrogates_in_json_strings_are_replaced(client, make_key):
    attrs = [
        {"key": "k\x00", "value": {"stringValue": "a\x00b"}},
        {"key": "s", "value": {"stringValue": "x\ud800y"}},
        {"key": "b", "value": {"bytesValue": "\x00"}},
    ]
    body = json_body(json_span(GOOD, attrs, name="n\udfff\x00"))
    r = client.post("/v1/traces", content=body, headers={**auth(make_key("ingest")), **JS})
    assert partial(r) == (0, "")
    (span,) = stored_spans(client, make_key).values()
    assert span["name"] == "n\ufffd\ufffd"
    assert span["attributes"]["k\ufffd"] == "a\ufffdb"
    assert span["attributes"]["s"] == "x\ufffdy"
    assert span["attributes"]["b"] == "\ufffd"


def test_json_attributes_nested_past_the_limit_refuse_only_their_span(client, make_key):
    deep = [{"key": "a", "value": kvlist(40)}]
    ok = [{"key": "a", "value": kvlist(32)}]
    body = json_body(json_span(GOOD, ok), json_span(BAD, deep))
    r = client.post("/v1/traces", content=body, headers={**auth(make_key("ingest")), **JS})
    rejected, message = partial(r)
    assert rejected == 1
    assert "attributes.a.k.k" in message and "more than 32 deep" in message
    assert list(stored_spans(client, make_key)) == [GOOD]
    assert client.get("/api/v1/traces", headers=auth(make_key("read"))).status_code == 200


def test_a_long_attribute_key_refuses_only_its_span(client, make_key):
    # A 4,400-digit message index passed int()'s digit limit in the flat tool-call parser:
    # a 500 that lost the good span of the same request. Keys are capped at 128 characters.
    huge = "llm.output_messages." + "9" * 4400 + ".message.tool_calls.0.tool_call.id"
    llm = {"key": "openinference.span.kind", "value": {"stringValue": "LLM"}}
    bad = [llm, {"key": huge, "value": {"stringValue": "c1"}}]
    longest_ok = [llm, {"key": "k" * 128, "value": {"intValue": 1}}]
    body = json_body(json_span(GOOD, longest_ok), json_span(BAD, bad))
    r = client.post("/v1/traces", content=body, headers={**auth(make_key("ingest")), **JS})
    rejected, message = partial(r)
    assert rejected == 1
    assert "span 1" in message and "4454 characters; the limit is 128" in message
    assert list(stored_spans(client, make_key)) == [GOOD]


def test_json_too_deep_to_parse_is_a_400(client, make_key):
    # 400 kvlists are 1600 JSON levels: past orjson's limit and Python's recursion limit.
    level = '{"kvlistValue": {"values": [{"key": "k", "value": '
    value = level * 400 + '{"intValue": 1}' + "}]}}" * 400
    body = json_body(json_span(GOOD, [{"key": "a", "value": "VALUE"}])).replace('"VALUE"', value)
    r = client.post("/v1/traces", content=body, headers={**auth(make_key("ingest")), **JS})
    assert r.status_code == 400, r.text


def nested_array(depth: int) -> AnyValue:
    value = AnyValue(int_value=1)
    for _ in range(depth):
        outer = AnyValue()
        outer.array_value.values.append(value)
        value = outer
    return value


def pb_request(where: str) -> bytes:
    """Spans GOOD and BAD; a 40-deep array in BAD's attributes, its event's, or the resource's."""
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    scope = rs.scope_spans.add()
    for span_id in (GOOD, BAD):
        sp = scope.spans.add()
        sp.trace_id, sp.span_id, sp.name = bytes.fromhex(TRACE), bytes.fromhex(span_id), "s"
        sp.start_time_unix_nano = 1_700_000_000_000_000_000
    if where == "attributes":
        target = sp.attributes
    elif where == "events":
        event = sp.events.add()
        event.name = "e"
        target = event.attributes
    else:
        target = rs.resource.attributes
    kv = target.add()
    kv.key = "a"
    kv.value.CopyFrom(nested_array(40))
    return req.SerializeToString()


@pytest.mark.parametrize(
    ("where", "named"), [("attributes", "attributes.a"), ("events", "events[0].attributes.a")]
)
def test_protobuf_values_nested_past_the_limit_refuse_only_their_span(
    client, make_key, where, named
):
    r = client.post(
        "/v1/traces", content=pb_request(where), headers={**auth(make_key("ingest")), **PB}
    )
    assert r.status_code == 200, r.text
    answer = ExportTraceServiceResponse.FromString(r.content).partial_success
    assert answer.rejected_spans == 1
    assert f"{named}: nests arrays/maps more than 32 deep" in answer.error_message
    assert list(stored_spans(client, make_key)) == [GOOD]


def test_over_deep_resource_attributes_refuse_the_resource_spans(client, make_key):
    r = client.post(
        "/v1/traces", content=pb_request("resource"), headers={**auth(make_key("ingest")), **PB}
    )
    answer = ExportTraceServiceResponse.FromString(r.content).partial_success
    assert r.status_code == 200 and answer.rejected_spans == 2
    assert "resource.attributes.a: nests arrays/maps more than 32 deep" in answer.error_message


@pytest.fixture
def small_client(settings: Settings) -> Iterator[TestClient]:
    tight = settings.model_copy(update={"max_attribute_depth": 2, "max_attributes_bytes": 200})
    with TestClient(create_app(tight, start_background=False)) as c:
        yield c


def test_limits_come_from_settings(small_client, make_key):
    big = [{"key": "a", "value": {"stringValue": "x" * 300}}]
    deep = [{"key": "a", "value": kvlist(3)}]
    body = json_body(
        json_span(GOOD, [{"key": "a", "value": kvlist(2)}]),
        json_span(BAD, big),
        json_span("eee19b7ec3c1b176", deep),
    )
    r = small_client.post("/v1/traces", content=body, headers={**auth(make_key("ingest")), **JS})
    rejected, message = partial(r)
    assert rejected == 2
    assert "bytes as JSON exceed the limit of 200" in message
    assert "attributes.a.k.k: nests arrays/maps more than 2 deep" in message
