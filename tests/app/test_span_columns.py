"""Normalised span columns: from every convention over OTLP, and given natively."""

from __future__ import annotations

from typing import Any

import pytest

from app.otlp.decode import DecodedSpan
from app.otlp.mapping import map_spans
from tests.conftest import auth

T0 = 1_700_000_000_000_000_000


def mapped_row(attrs: dict[str, Any], **kw: Any) -> dict[str, Any]:
    sp = DecodedSpan(
        trace_id="ab" * 16,
        span_id="cd" * 8,
        parent_span_id=None,
        name="llm",
        kind=3,
        start_ns=T0,
        end_ns=T0 + 1_500_000,
        status_code=kw.get("status_code", 0),
        status_message="",
        attributes=attrs,
        events=kw.get("events", []),
        resource={"service.name": "svc"},
        scope="lib",
    )
    (row,) = [ev.row for ev in map_spans([sp]).events if ev.type == "span"]
    return row


COLUMNS = ("request_model", "response_model", "input_tokens", "output_tokens", "total_tokens")


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        (  # OTel GenAI
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "m",
                "gen_ai.response.model": "m-1",
                "gen_ai.usage.input_tokens": 3,
                "gen_ai.usage.output_tokens": 4,
            },
            ("m", "m-1", 3, 4, 7),
        ),
        (  # OpenInference: llm.model_name is the response model
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "m-1",
                "llm.invocation_parameters": '{"model": "m", "temperature": 0}',
                "llm.token_count.prompt": 3,
                "llm.token_count.completion": 4,
                "llm.token_count.total": 8,
            },
            ("m", "m-1", 3, 4, 8),
        ),
        (  # OpenLLMetry / older GenAI names
            {
                "llm.request.type": "chat",
                "gen_ai.request.model": "m",
                "gen_ai.usage.prompt_tokens": 3,
                "gen_ai.usage.completion_tokens": 4,
                "llm.usage.total_tokens": 9,
            },
            ("m", None, 3, 4, 9),
        ),
        (  # wrong types leave the columns empty, the attributes stay
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": 5,
                "gen_ai.usage.input_tokens": -1,
                "gen_ai.usage.output_tokens": 2.5,
                "llm.invocation_parameters": "{bad",
            },
            (None, None, None, None, None),
        ),
    ],
)
def test_columns_from_each_convention(attrs: dict[str, Any], expected: tuple[Any, ...]) -> None:
    row = mapped_row(dict(attrs))
    assert tuple(row[c] for c in COLUMNS) == expected
    assert row["latency_ms"] == 1.5


def test_cost_and_clean_error_type_prefers_the_exception_event() -> None:
    row = mapped_row(
        {
            "gen_ai.operation.name": "chat",
            "llm.cost.total": 0.25,
            "error.type": "<class 'openai.InternalServerError'>",
        },
        status_code=2,
    )
    assert (row["cost"], row["error_type"]) == (0.25, "openai.InternalServerError")
    event = {
        "name": "exception",
        "time_unix_nano": T0,
        "attributes": {"exception.type": "httpx.ReadTimeout"},
    }
    row = mapped_row({"error.type": "<class 'Exception'>"}, status_code=2, events=[event])
    assert row["error_type"] == "httpx.ReadTimeout"


def test_native_ingest_takes_the_same_columns(client: Any, make_key: Any) -> None:
    key, reader = make_key("ingest"), make_key("read")
    body = {
        "trace_id": "t-c",
        "span_id": "s1",
        "kind": "llm",
        "request_model": "m",
        "response_model": "m-1",
        "input_tokens": 3,
        "output_tokens": 4,
        "total_tokens": 7,
        "cost": 0.5,
        "started_at": 100.0,
        "ended_at": 100.25,
    }
    events = [
        {"id": "e1", "type": "trace", "body": {"trace_id": "t-c", "agent": "a"}},
        {"id": "e2", "type": "span", "body": body},
    ]
    r = client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
    assert r.status_code == 200 and r.json()["rejected"] == [], r.text
    (span,) = client.get("/api/v1/traces/t-c", headers=auth(reader)).json()["spans"]
    assert {c: span[c] for c in (*COLUMNS, "cost", "latency_ms")} == {
        "request_model": "m",
        "response_model": "m-1",
        "input_tokens": 3,
        "output_tokens": 4,
        "total_tokens": 7,
        "cost": 0.5,
        "latency_ms": 250.0,
    }
    bad = {"id": "e3", "type": "span", "body": {**body, "span_id": "s2", "input_tokens": "3"}}
    good = {"id": "e4", "type": "trace", "body": {"trace_id": "t-d", "agent": "a"}}
    answer = client.post("/api/v1/ingest", json={"events": [good, bad]}, headers=auth(key))
    assert answer.status_code == 200, answer.text
    assert "events[1].body.input_tokens" in answer.json()["rejected"][0]["error"]


def test_evaluation_results_on_spans_become_scores() -> None:
    event = {
        "name": "gen_ai.evaluation.result",
        "time_unix_nano": T0,
        "attributes": {
            "gen_ai.evaluation.name": "relevance",
            "gen_ai.evaluation.score.value": 0.5,
            "gen_ai.evaluation.score.label": "partly",
            "gen_ai.evaluation.explanation": "half the question",
        },
    }
    attrs = {
        "openinference.span.kind": "EVALUATOR",
        "evaluations.0.evaluation.name": "faithful",
        "evaluations.0.evaluation.score": True,  # a bool is no score value
        "annotations.1.annotation.name": "qa",
        "annotations.1.annotation.score": 2,
        "annotations.2.annotation.score": 1.0,  # no name
    }
    sp = DecodedSpan(
        trace_id="ab" * 16,
        span_id="cd" * 8,
        parent_span_id=None,
        name="judge",
        kind=1,
        start_ns=T0,
        end_ns=T0 + 1,
        status_code=0,
        status_message="",
        attributes=attrs,
        resource={},
        scope="",
        events=[event],
    )
    scores = [ev for ev in map_spans([sp]).events if ev.type == "score"]
    assert sorted((s.row["name"], s.row["value"], s.row["label"]) for s in scores) == [
        ("qa", 2.0, None),
        ("relevance", 0.5, "partly"),
    ]
    assert len({s.event_id for s in scores}) == 2
