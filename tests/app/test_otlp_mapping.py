"""Decoding OTLP (protobuf and JSON) and mapping spans to Telltale rows, without a server."""

from __future__ import annotations

import base64
import math

import orjson
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from app.otlp.decode import MalformedBody, decode_protobuf
from app.otlp.decode_json import decode_json
from app.otlp.mapping import map_spans, span_kind

TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "eee19b7ec3c1b174"
PARENT = "eee19b7ec3c1b173"


def _json_body(spans: list[dict], resource: dict | None = None) -> bytes:
    res = resource or {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]}
    return orjson.dumps(
        {
            "resourceSpans": [
                {"resource": res, "scopeSpans": [{"scope": {"name": "s"}, "spans": spans}]}
            ]
        }
    )


def _span(**over: object) -> dict:
    base: dict = {
        "traceId": TRACE,
        "spanId": SPAN,
        "name": "step",
        "kind": 1,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": 1700000001500000000,
        "attributes": [],
    }
    base.update(over)
    return base


def _attr(key: str, **value: object) -> dict:
    return {"key": key, "value": value}


@pytest.mark.parametrize(
    ("attrs", "kind"),
    [
        ({"gen_ai.operation.name": "invoke_agent"}, "agent"),
        ({"gen_ai.operation.name": "create_agent"}, "agent"),
        ({"gen_ai.operation.name": "execute_tool"}, "tool"),
        ({"gen_ai.operation.name": "chat"}, "llm"),
        ({"gen_ai.operation.name": "text_completion"}, "llm"),
        ({"gen_ai.operation.name": "generate_content"}, "llm"),
        ({"gen_ai.operation.name": "embeddings"}, "embedding"),
        ({"gen_ai.operation.name": "plan"}, "plan"),
        ({"gen_ai.operation.name": "retrieval"}, "retrieval"),
        ({"openinference.span.kind": "AGENT"}, "agent"),
        ({"openinference.span.kind": "TOOL"}, "tool"),
        ({"openinference.span.kind": "LLM"}, "llm"),
        ({"openinference.span.kind": "CHAIN"}, "chain"),
        ({"openinference.span.kind": "RETRIEVER"}, "retrieval"),
        ({"openinference.span.kind": "EMBEDDING"}, "embedding"),
        ({"openinference.span.kind": "EVALUATOR"}, "evaluator"),
        ({"traceloop.span.kind": "workflow"}, "chain"),
        ({"gen_ai.system": "openai"}, "llm"),
        ({"http.method": "GET"}, "step"),
    ],
)
def test_span_kind_follows_genai_then_openinference(attrs: dict, kind: str) -> None:
    assert span_kind(attrs) == kind


def test_json_hex_and_base64_ids_decode_to_the_same_hex() -> None:
    b64_trace = base64.b64encode(bytes.fromhex(TRACE)).decode()
    b64_span = base64.b64encode(bytes.fromhex(SPAN)).decode()
    hex_span = decode_json(_json_body([_span(parentSpanId=PARENT)]))[0]
    b64 = decode_json(_json_body([_span(traceId=b64_trace, spanId=b64_span)]))[0]
    assert (hex_span.trace_id, hex_span.span_id, hex_span.parent_span_id) == (TRACE, SPAN, PARENT)
    assert (b64.trace_id, b64.span_id, b64.error) == (TRACE, SPAN, None)


@pytest.mark.parametrize(
    "ids",
    [{"spanId": ""}, {"traceId": "00" * 16}, {"spanId": "abc"}, {"traceId": "zz" * 16}],
)
def test_bad_ids_reject_the_span_not_the_request(ids: dict) -> None:
    spans = decode_json(_json_body([_span(**ids), _span(spanId="eee19b7ec3c1b175")]))
    mapped = map_spans(spans)
    assert mapped.rejected == 1
    assert [ev.row["span_id"] for ev in mapped.events] == ["eee19b7ec3c1b175"]
    assert "span 0" in mapped.messages[0]


def test_any_values_are_flattened_and_kept() -> None:
    attrs = [
        _attr("s", stringValue="a\x00b"),
        _attr("i", intValue="42"),
        _attr("d", doubleValue=0.5),
        _attr("nan", doubleValue="NaN"),
        _attr("b", boolValue=True),
        _attr("bytes", bytesValue="AAE="),
        _attr("arr", arrayValue={"values": [{"intValue": 1}, {"stringValue": "x"}]}),
        _attr("kv", kvlistValue={"values": [_attr("inner", boolValue=False)]}),
        _attr("custom.thing", stringValue="kept"),
    ]
    (span,) = decode_json(_json_body([_span(attributes=attrs)]))
    assert span.attributes == {
        "s": "a\ufffdb",
        "i": 42,
        "d": 0.5,
        "nan": "NaN",
        "b": True,
        "bytes": "AAE=",
        "arr": [1, "x"],
        "kv": {"inner": False},
        "custom.thing": "kept",
    }


def test_protobuf_values_match_json_values() -> None:
    req = ExportTraceServiceRequest()
    sp = req.resource_spans.add().scope_spans.add().spans.add()
    sp.trace_id, sp.span_id, sp.name = bytes.fromhex(TRACE), bytes.fromhex(SPAN), "x"
    sp.attributes.extend(
        [
            KeyValue(key="inf", value=AnyValue(double_value=math.inf)),
            KeyValue(key="raw", value=AnyValue(bytes_value=b"\x00\x01")),
            KeyValue(key="n", value=AnyValue(int_value=-3)),
        ]
    )
    (span,) = decode_protobuf(req.SerializeToString())
    assert span.attributes == {"inf": "inf", "raw": "AAE=", "n": -3}
    assert (span.trace_id, span.span_id, span.parent_span_id) == (TRACE, SPAN, None)


def test_protobuf_empty_and_zero_values_and_span_fields_keep_their_place() -> None:
    # The decoder reads a non-empty string / non-zero int before asking which value is
    # set, and builds the span positionally: the falsy values and field order are the edges.
    req = ExportTraceServiceRequest()
    sp = req.resource_spans.add().scope_spans.add().spans.add()
    sp.trace_id, sp.span_id, sp.name = bytes.fromhex(TRACE), bytes.fromhex(SPAN), "x"
    sp.kind, sp.start_time_unix_nano, sp.end_time_unix_nano = 3, 10, 20
    sp.status.code, sp.status.message = 2, "boom"
    sp.attributes.extend(
        [
            KeyValue(key="empty", value=AnyValue(string_value="")),
            KeyValue(key="zero", value=AnyValue(int_value=0)),
            KeyValue(key="no", value=AnyValue(bool_value=False)),
            KeyValue(key="d0", value=AnyValue(double_value=0.0)),
            KeyValue(key="unset", value=AnyValue()),
            KeyValue(key="nul", value=AnyValue(string_value="a\x00")),
            KeyValue(key="big", value=AnyValue(int_value=2**40)),
        ]
    )
    (span,) = decode_protobuf(req.SerializeToString())
    assert span.attributes == {
        "empty": "",
        "zero": 0,
        "no": False,
        "d0": 0.0,
        "unset": None,
        "nul": "a\ufffd",
        "big": 2**40,
    }
    assert type(span.attributes["no"]) is bool and type(span.attributes["d0"]) is float
    assert (span.name, span.kind, span.start_ns, span.end_ns) == ("x", 3, 10, 20)
    assert (span.status_code, span.status_message, span.scope, span.error) == (2, "boom", "", None)


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[]",
        b'{"resourceSpans": {}}',
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "soon"}]}]}]}',
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [{"key": "a", "value": {"intValue": true}}]}]}]}]}',
    ],
)
def test_malformed_json_is_refused_with_a_field(body: bytes) -> None:
    with pytest.raises(MalformedBody):
        decode_json(body)


def test_malformed_protobuf_is_refused() -> None:
    with pytest.raises(MalformedBody):
        decode_protobuf(b"\x0a\x05abc")


def test_genai_tree_maps_to_rows_scores_and_one_trace() -> None:
    root = _span(
        spanId=PARENT,
        name="invoke_agent planner",
        attributes=[
            _attr("gen_ai.operation.name", stringValue="invoke_agent"),
            _attr("gen_ai.agent.name", stringValue="planner"),
            _attr("gen_ai.agent.version", stringValue="7"),
            _attr("telltale.input_hash", stringValue="h1"),
            _attr("telltale.source", stringValue="eval"),
            _attr("telltale.score.resolved", doubleValue=1.0),
            _attr("telltale.score.resolved.kind", stringValue="true"),
            _attr("telltale.confidence", doubleValue=3.0),
        ],
        status={"code": "STATUS_CODE_ERROR", "message": "boom"},
    )
    tool = _span(
        parentSpanId=PARENT,
        name="execute_tool search",
        startTimeUnixNano="1699999999000000000",
        attributes=[
            _attr("gen_ai.operation.name", stringValue="execute_tool"),
            _attr("gen_ai.tool.name", stringValue="search"),
            _attr("error.type", stringValue="TimeoutError"),
            _attr("telltale.step_index", intValue=3),
            _attr("llm.model_name", stringValue="m1"),
        ],
    )
    mapped = map_spans(decode_json(_json_body([root, tool])))
    rows = {ev.row.get("span_id"): ev.row for ev in mapped.events if ev.type == "span"}
    assert rows[PARENT]["kind"] == "agent" and rows[PARENT]["status"] == "error"
    assert rows[PARENT]["confidence"] is None  # 3.0 is out of range: a warning, not a loss
    assert any("telltale.confidence" in m for m in mapped.messages)
    assert rows[SPAN]["tool_name"] == "search" and rows[SPAN]["error_type"] == "TimeoutError"
    assert rows[SPAN]["step_index"] == 3
    # Models are normalised on LLM and embedding spans only (test_span_columns.py).
    assert rows[SPAN]["attributes"]["llm.model_name"] == "m1"
    assert "gen_ai.response.model" not in rows[SPAN]["attributes"]
    (score,) = [ev for ev in mapped.events if ev.type == "score"]
    assert score.event_id == f"otlp:{TRACE}:{PARENT}:score:resolved"
    assert (score.row["name"], score.row["value"], score.row["kind"]) == ("resolved", 1.0, "true")
    (trace,) = mapped.traces
    assert (trace["agent"], trace["agent_version"], trace["rank"]) == ("planner", "7", 2)
    assert (trace["status"], trace["source"], trace["input_hash"]) == ("error", "eval", "h1")
    assert trace["started_at"].timestamp() == 1699999999.0
    assert trace["ended_at"].timestamp() == 1700000001.5
    assert trace["attributes"] == {
        "resource.service.name": "svc",
        "otel.agent_key": f"0:{1700000000 * 10**9:020d}:{PARENT}",
    }
