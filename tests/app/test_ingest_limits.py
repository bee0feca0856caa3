"""Native ingest input that cannot be stored is refused per event, by name; the batch lands.

NUL, lone surrogates, NaN, over-deep or over-large attributes, times that overflow in UTC,
and bulk embeddings with bad per-vector fields: a rejection or a 4xx naming the field,
never a 500 or a retryable 503, and nothing stored that breaks later batches or reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.conftest import auth, sqlite_only


def span(event_id: str = "good", trace_id: str = "t-1", **body: Any) -> dict[str, Any]:
    return {
        "id": event_id,
        "type": "span",
        "body": {"trace_id": trace_id, "span_id": event_id, "name": "step", **body},
    }


def post_raw(client: TestClient, key: str, events: list[dict[str, Any]]) -> Any:
    """Post as Python's json writes it: NaN literals and ``\\ud800`` escapes go through."""
    return client.post("/api/v1/ingest", content=json.dumps({"events": events}), headers=auth(key))


def assert_only_bad_refused(r: Any, field: str) -> None:
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["accepted"] == 1, body
    assert [x["index"] for x in body["rejected"]] == [1], body
    assert body["rejected"][0]["error"].startswith(field), body


BAD_TEXT = {"nul": "a\x00b", "surrogate": "a\ud800b"}
TEXT_FIELDS = [
    (lambda s: span(s), "events[1].id"),
    (lambda s: span("bad", trace_id=s), "events[1].body.trace_id"),
    (lambda s: span("bad", name=s), "events[1].body.name"),
    (lambda s: span("bad", attributes={s: 1}), "events[1].body.attributes: key"),
    (lambda s: span("bad", attributes={"k": s}), "events[1].body.attributes.k"),
    (lambda s: span("bad", attributes={"k": {"n": [s]}}), "events[1].body.attributes.k.n[0]"),
    (
        lambda s: {
            "id": "bad",
            "type": "score",
            "body": {"trace_id": "t-1", "name": s, "value": 1},
        },
        "events[1].body.name",
    ),
    (
        lambda s: {"id": "bad", "type": "trace", "body": {"trace_id": "t-1", "agent": s}},
        "events[1].body.agent",
    ),
]


@pytest.mark.parametrize("kind", sorted(BAD_TEXT))
@pytest.mark.parametrize(("make", "field"), TEXT_FIELDS)
def test_nul_and_lone_surrogates_are_refused_by_name(client, make_key, kind, make, field):
    r = post_raw(client, make_key("ingest"), [span(), make(BAD_TEXT[kind])])
    assert_only_bad_refused(r, field)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_attribute_values_are_refused_and_do_not_poison_the_trace(
    client, make_key, number
):
    key = make_key("ingest")
    attributes = {"x": [1, float(number)]}  # json.dumps writes NaN / Infinity literals
    bad = {"id": "bad", "type": "trace", "body": {"trace_id": "t-1", "attributes": attributes}}
    r = post_raw(client, key, [span(), bad])
    assert_only_bad_refused(r, "events[1].body.attributes.x[1]")
    trace = {"id": "t", "type": "trace", "body": {"trace_id": "t-1", "attributes": {"y": 1}}}
    again = client.post("/api/v1/ingest", json={"events": [trace]}, headers=auth(key))
    assert again.status_code == 200 and again.json()["accepted"] == 1, again.text
    read = make_key("read")
    assert client.get("/api/v1/traces/t-1", headers=auth(read)).json()["attributes"] == {"y": 1}
    assert client.get("/readyz").status_code == 200


@sqlite_only
def test_integers_past_64_bits_in_attributes_are_refused(client, make_key):
    # A lone surrogate elsewhere sends the body through the standard parser, which keeps
    # big integers exact (orjson would have made a float of it).
    events = [span(), span("bad", attributes={"n": 10**30}), span("x", name="\ud800")]
    r = post_raw(client, make_key("ingest"), events)
    assert r.status_code == 200, r.text
    errors = [x["error"] for x in r.json()["rejected"]]
    assert errors[0].startswith("events[1].body.attributes.n: integer does not fit in 64 bits")


def nested(depth: int) -> Any:
    value: Any = 1
    for n in range(depth):
        value = {"k": value} if n % 2 else [value]
    return value


def test_attributes_nested_past_the_limit_are_refused_and_reads_still_work(client, make_key):
    key = make_key("ingest")
    r = client.post(
        "/api/v1/ingest",
        json={
            "events": [
                span(attributes={"ok": nested(32)}),
                span("bad", attributes={"a": nested(300)}),
            ]
        },
        headers=auth(key),
    )
    assert_only_bad_refused(r, "events[1].body.attributes.a")
    assert "more than 32 deep" in r.json()["rejected"][0]["error"]
    read = make_key("read")
    assert client.get("/api/v1/traces/t-1", headers=auth(read)).status_code == 200
    assert client.get("/api/v1/traces", headers=auth(read)).status_code == 200


@sqlite_only
def test_a_body_too_deep_to_parse_is_a_400(client, make_key):
    raw = '{"events": [{"id": "a", "type": "span", "body": {"attributes": {"x": %s1%s}}}]}'
    r = client.post(
        "/api/v1/ingest", content=raw % ("[" * 5000, "]" * 5000), headers=auth(make_key("ingest"))
    )
    assert r.status_code == 400 and "deep" in r.text


@pytest.fixture
def small_client(settings: Settings) -> Iterator[TestClient]:
    tight = settings.model_copy(
        update={"max_attribute_depth": 2, "max_attributes_bytes": 200, "max_embedding_dim": 8}
    )
    with TestClient(create_app(tight, start_background=False)) as c:
        yield c


@sqlite_only
def test_limits_come_from_settings(small_client, make_key):
    key = make_key("ingest")
    events = [
        span(attributes={"a": [[1]]}),
        span("deep", attributes={"a": [[[1]]]}),
        span("big", attributes={"a": "x" * 300}),
        {"id": "wide", "type": "embedding", "body": {"stream": "s", "vector": [0.5] * 9}},
    ]
    r = small_client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
    assert r.status_code == 200 and r.json()["accepted"] == 1, r.text
    errors = [x["error"] for x in r.json()["rejected"]]
    assert errors[0].startswith("events[1].body.attributes.a[0][0]: nests arrays/maps more than 2")
    assert errors[1].startswith("events[2].body.attributes: is 308 bytes as JSON; the limit is 200")
    assert errors[2].startswith("events[3].body.vector: dimension 9 exceeds the maximum 8")


@sqlite_only
@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:30:00-01:00"])
def test_times_that_overflow_in_utc_are_refused_by_name(client, make_key, when):
    r = client.post(
        "/api/v1/ingest",
        json={"events": [span(), span("bad", started_at=when)]},
        headers=auth(make_key("ingest")),
    )
    assert_only_bad_refused(r, "events[1].body.started_at")


def bulk(**fields: Any) -> dict[str, Any]:
    return {"stream": "s", "vectors": [[0.1, 0.2], [0.3, 0.4]], "sample_ids": ["a", "b"], **fields}


@sqlite_only
@pytest.mark.parametrize(
    ("body", "field"),
    [
        (bulk(trace_ids=["t-1"]), "body.trace_ids"),
        (bulk(ids=["a", {"x": 1}]), "body.ids[1]"),
        (bulk(ids=["a", "b\x00"]), "body.ids[1]"),
        (bulk(ids=["a", "b" * 201]), "body.ids[1]"),
        (bulk(sample_ids=["a", "b" * 129]), "body.sample_ids[1]"),
        (bulk(trace_ids=["t", "u" * 65]), "body.trace_ids[1]"),
        (bulk(stream="s" * 100, sample_ids=["a", "b" * 120]), "body.sample_ids"),
        (bulk(vectors=[[0.0] * 5000, [0.0] * 5000]), "body.vectors"),
        (bulk(vectors=[[[1.0]], [[2.0]]]), "body.vectors"),
        (
            {"stream": "s", "dim": 1_000_000, "vectors_b64": "AAAAAA==", "ids": ["a"]},
            "body.dim",
        ),
    ],
)
def test_bulk_embeddings_refuse_bad_per_vector_fields_by_name(client, make_key, body, field):
    r = client.post("/api/v1/embeddings", json=body, headers=auth(make_key("ingest")))
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith(field), r.text


def test_bulk_embeddings_take_null_trace_ids(client, make_key):
    body = bulk(trace_ids=["t-1", None])
    r = client.post("/api/v1/embeddings", json=body, headers=auth(make_key("ingest")))
    assert r.status_code == 200 and r.json()["accepted"] == 2, r.text
