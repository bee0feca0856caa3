"""Native ingestion: round trip, idempotency, partial success, and every class of bad input."""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

import httpx
import numpy as np
from sqlalchemy import func, select

from app.models import Embedding, IngestEvent, Score, Span, Trace
from tests.conftest import auth


def trace_batch(trace_id: str = "t-1", prefix: str = "") -> list[dict[str, Any]]:
    return [
        {
            "id": f"{prefix}trace-{trace_id}",
            "type": "trace",
            "body": {
                "trace_id": trace_id,
                "agent": "planner",
                "agent_version": "1.2.0",
                "started_at": "2026-11-29T10:00:00Z",
                "ended_at": "2026-11-29T10:00:05Z",
                "status": "error",
                "input_hash": "h1",
                "entry_point": "api",
                "source": "production",
                "attributes": {"decision": "refund", "task_type": "billing"},
            },
        },
        *[
            {
                "id": f"{prefix}span-{trace_id}-{i}",
                "type": "span",
                "body": {
                    "trace_id": trace_id,
                    "span_id": f"s{i}",
                    "parent_span_id": None if i == 0 else "s0",
                    "kind": ["agent", "llm", "tool"][i],
                    "name": f"step {i}",
                    "tool_name": "search" if i == 2 else None,
                    "status": "error" if i == 2 else "ok",
                    "error_type": "Timeout" if i == 2 else None,
                    "started_at": f"2026-11-29T10:00:0{i}Z",
                    "ended_at": f"2026-11-29T10:00:0{i + 1}Z",
                    "step_index": i,
                    "confidence": 0.9 - 0.1 * i,
                    "attributes": {"partial": i == 2},
                },
            }
            for i in range(3)
        ],
        {
            "id": f"{prefix}score-{trace_id}",
            "type": "score",
            "body": {"trace_id": trace_id, "name": "success", "value": 0.0, "kind": "true"},
        },
        {
            "id": f"{prefix}emb-{trace_id}",
            "type": "embedding",
            "body": {"stream": "planner.output", "vector": [0.1, 0.2, 0.3], "trace_id": trace_id},
        },
    ]


def count(engine: Any, model: Any) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(select(func.count()).select_from(model)))


def test_round_trip(client, make_key, engine):
    key = make_key("ingest")
    reader = make_key("read")
    r = client.post("/api/v1/ingest", json={"events": trace_batch()}, headers=auth(key))
    assert r.status_code == 200, r.text
    assert r.json() == {"accepted": 6, "duplicates": 0, "rejected": []}

    got = client.get("/api/v1/traces/t-1", headers=auth(reader)).json()
    assert got["agent"] == "planner" and got["status"] == "error"
    assert got["attributes"]["decision"] == "refund"
    assert [s["span_id"] for s in got["spans"]] == ["s0", "s1", "s2"]
    assert got["spans"][2]["tool_name"] == "search" and got["spans"][2]["error_type"] == "Timeout"
    assert got["spans"][2]["confidence"] == 0.7
    assert got["scores"] == [
        {
            "name": "success",
            "value": 0.0,
            "kind": "true",
            "source": "online",
            "created_at": got["scores"][0]["created_at"],
            "label": None,
            "explanation": None,
        }
    ]
    listed = client.get("/api/v1/traces?agent=planner&status=error", headers=auth(reader)).json()
    assert [t["trace_id"] for t in listed["traces"]] == ["t-1"]
    streams = client.get("/api/v1/streams", headers=auth(reader)).json()["streams"]
    assert streams[0]["name"] == "planner.output" and streams[0]["dim"] == 3
    assert streams[0]["count"] == 1
    with engine.connect() as conn:
        blob = conn.scalar(select(Embedding.vector))
    assert np.frombuffer(blob, "<f4").tolist() == np.float32([0.1, 0.2, 0.3]).tolist()


def test_span_attributes_are_stored_as_sent(client, make_key):
    """On PostgreSQL the span COPY writes the JSON validation already wrote; what is read
    back must be the map that was sent, whatever it holds, and {} when none was."""
    key, reader = make_key("ingest"), make_key("read")
    attrs = {
        "text": "naïve café ☕",
        "nested": {"list": [1, 2.5, True, None, {"deep": "x"}], "empty": {}},
        "big": 2**62,
        "quote": 'say "hi"\n',
    }
    events = [
        {"id": "a-0", "type": "span", "body": {"trace_id": "ta", "span_id": "s0"}},
        {
            "id": "a-1",
            "type": "span",
            "body": {"trace_id": "ta", "span_id": "s1", "attributes": attrs},
        },
    ]
    r = client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
    assert r.json()["accepted"] == 2, r.text
    spans = client.get("/api/v1/traces/ta", headers=auth(reader)).json()["spans"]
    assert [s["attributes"] for s in spans] == [{}, attrs]


def test_trace_list_filters_and_cursor(client, make_key):
    key = make_key("admin")
    events = []
    for i in range(7):
        events += trace_batch(f"t{i}", prefix=f"{i}-")[:1]
        events[-1]["body"]["source"] = "eval" if i % 2 else "production"
        events[-1]["body"]["started_at"] = f"2026-11-2{i}T00:00:00Z"
    assert (
        client.post("/api/v1/ingest", json={"events": events}, headers=auth(key)).status_code == 200
    )
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 3, "source": "production"}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/api/v1/traces", params=params, headers=auth(key)).json()
        seen += [t["trace_id"] for t in page["traces"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ["t6", "t4", "t2", "t0"]
    since = client.get(
        "/api/v1/traces", params={"since": "2026-11-24T00:00:00Z"}, headers=auth(key)
    ).json()
    assert {t["trace_id"] for t in since["traces"]} == {"t4", "t5", "t6"}
    bad = client.get("/api/v1/traces", params={"status": "maybe"}, headers=auth(key))
    assert bad.status_code == 422 and "status" in bad.json()["detail"]


def test_resend_is_duplicate_and_writes_nothing(client, make_key, engine):
    key = make_key("ingest")
    body = {"events": trace_batch()}
    client.post("/api/v1/ingest", json=body, headers=auth(key))
    before = [count(engine, m) for m in (Trace, Span, Score, Embedding, IngestEvent)]
    again = client.post("/api/v1/ingest", json=body, headers=auth(key)).json()
    assert again == {"accepted": 0, "duplicates": 6, "rejected": []}
    assert [count(engine, m) for m in (Trace, Span, Score, Embedding, IngestEvent)] == before


def test_duplicate_ids_within_one_batch(client, make_key, engine):
    key = make_key("ingest")
    events = trace_batch()[1:2] * 3
    assert client.post("/api/v1/ingest", json={"events": events}, headers=auth(key)).json() == {
        "accepted": 1,
        "duplicates": 2,
        "rejected": [],
    }
    assert count(engine, Span) == 1


def test_concurrent_resends_write_once(live_server, make_key, engine):
    key = make_key("ingest")
    body = {"events": trace_batch()}
    answers: list[dict[str, Any]] = []

    def send() -> None:
        with httpx.Client(base_url=live_server.url, timeout=30) as c:
            r = c.post("/api/v1/ingest", json=body, headers=auth(key))
            assert r.status_code == 200, r.text
            answers.append(r.json())

    threads = [threading.Thread(target=send) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(a["accepted"] for a in answers) == 6
    assert sum(a["duplicates"] for a in answers) == 5 * 6
    assert count(engine, Span) == 3 and count(engine, Trace) == 1 and count(engine, Score) == 1


def test_partial_success_writes_only_good_events(client, make_key, engine):
    key = make_key("ingest")
    events = trace_batch()
    events[1]["body"]["step_index"] = "first"  # wrong type
    events[3]["body"].pop("span_id")  # missing id
    r = client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
    assert r.status_code == 200
    body = r.json()
    assert body["accepted"] == 4
    assert [(x["index"], x["id"]) for x in body["rejected"]] == [
        (1, "span-t-1-0"),
        (3, "span-t-1-2"),
    ]
    assert "events[1].body.step_index" in body["rejected"][0]["error"]
    assert "events[3].body.span_id" in body["rejected"][1]["error"]
    assert count(engine, Span) == 1
    with engine.connect() as conn:
        ids = set(conn.scalars(select(IngestEvent.event_id)))
    assert "span-t-1-0" not in ids and "span-t-1-2" not in ids
    # The rejected events can be fixed and re-sent: their ids were never claimed.
    fixed = trace_batch()
    r2 = client.post("/api/v1/ingest", json={"events": fixed}, headers=auth(key)).json()
    assert r2["accepted"] == 2 and r2["duplicates"] == 4


def _only(event: dict[str, Any]) -> dict[str, Any]:
    return {"events": [event]}


def _emb(body: dict[str, Any]) -> dict[str, Any]:
    return {"id": "e", "type": "embedding", "body": {"stream": "s", **body}}


NAN_B64 = base64.b64encode(np.array([1.0, np.nan], "<f4").tobytes()).decode()


def test_each_class_of_bad_input_names_its_field(client, make_key):
    key = make_key("ingest")
    cases = [
        (
            _only({"id": "x", "type": "span", "body": {"trace_id": 5.5, "span_id": "a"}}),
            "events[0].body.trace_id",
        ),
        (_only({"type": "span", "body": {"trace_id": "t", "span_id": "a"}}), "events[0].id"),
        (_only({"id": "x", "type": "metric", "body": {}}), "events[0].type"),
        (_only(_emb({"vector_b64": NAN_B64})), "events[0].body.vector_b64"),
        (_only(_emb({"vector_b64": "@@not-base64@@"})), "events[0].body.vector_b64"),
        (_only(_emb({"vector_b64": NAN_B64, "dtype": "int8"})), "events[0].body.dtype"),
        (
            _only(
                {"id": "x", "type": "score", "body": {"trace_id": "t", "name": "n", "value": "hi"}}
            ),
            "events[0].body.value",
        ),
        (
            _only(
                {"id": "x", "type": "trace", "body": {"trace_id": "t", "started_at": "yesterday"}}
            ),
            "events[0].body.started_at",
        ),
        ({"events": "nope"}, "events"),
        ({"batch": []}, "events"),
    ]
    for payload, field in cases:
        r = client.post("/api/v1/ingest", json=payload, headers=auth(key))
        assert 400 <= r.status_code < 500, (payload, r.text)
        assert field in json.dumps(r.json()), (field, r.text)


def test_nan_literal_from_python_json_names_the_field(client, make_key):
    key = make_key("ingest")
    raw = json.dumps(_only(_emb({"vector": [1.0, float("nan")]})))
    r = client.post("/api/v1/ingest", content=raw, headers=auth(key))
    assert r.status_code == 422 and "events[0].body.vector" in r.text and "NaN" in r.text


def test_values_past_float32_are_refused_not_a_crash(client, make_key):
    key = make_key("ingest")
    r = client.post("/api/v1/ingest", json=_only(_emb({"vector": [1.0, 1e300]})), headers=auth(key))
    assert r.status_code == 422 and "events[0].body.vector" in r.text and "infinite" in r.text
    bulk = {"stream": "s", "vectors": [[1.0, 1e300]], "sample_ids": ["a"]}
    r = client.post("/api/v1/embeddings", json=bulk, headers=auth(key))
    assert r.status_code == 422 and "body.vectors[0]" in r.text and "infinite" in r.text


def test_dimension_mismatch_against_stream(client, make_key, engine):
    key = make_key("ingest")
    ok = {"id": "a", "type": "embedding", "body": {"stream": "s", "vector": [1, 2, 3]}}
    client.post("/api/v1/ingest", json=_only(ok), headers=auth(key))
    bad = {"id": "b", "type": "embedding", "body": {"stream": "s", "vector": [1, 2]}}
    r = client.post("/api/v1/ingest", json=_only(bad), headers=auth(key))
    assert r.status_code == 422 and "events[0].body.vector" in r.text and "dimension" in r.text
    assert count(engine, Embedding) == 1


def test_non_json_and_oversize_bodies(client, make_key, settings):
    key = make_key("ingest")
    r = client.post("/api/v1/ingest", content=b"{not json", headers=auth(key))
    assert r.status_code == 400 and "JSON" in r.json()["detail"]
    big = b"x" * (settings.max_request_bytes + 1)
    r = client.post("/api/v1/ingest", content=big, headers=auth(key))
    assert r.status_code == 413
    many = {
        "events": [
            {"id": str(i), "type": "span", "body": {}}
            for i in range(settings.max_events_per_batch + 1)
        ]
    }
    r = client.post("/api/v1/ingest", json=many, headers=auth(key))
    assert r.status_code == 413 and "events" in r.json()["detail"]


def test_bulk_embeddings(client, make_key, engine):
    key = make_key("ingest")
    m = np.random.default_rng(0).standard_normal((10, 8)).astype("<f4")
    body = {
        "stream": "vlm.image",
        "model": "ViT-B-32",
        "dtype": "float32",
        "dim": 8,
        "vectors_b64": base64.b64encode(m.tobytes()).decode(),
        "sample_ids": [f"img{i}" for i in range(10)],
    }
    r = client.post("/api/v1/embeddings", json=body, headers=auth(key))
    assert r.json() == {"accepted": 10, "duplicates": 0, "rejected": []}
    assert (
        client.post("/api/v1/embeddings", json=body, headers=auth(key)).json()["duplicates"] == 10
    )
    f16 = dict(
        body,
        dtype="float16",
        vectors_b64=base64.b64encode(m.astype("<f2").tobytes()).decode(),
        sample_ids=[f"h{i}" for i in range(10)],
    )
    assert client.post("/api/v1/embeddings", json=f16, headers=auth(key)).json()["accepted"] == 10
    wrong_dim = dict(body, dim=4, sample_ids=[f"w{i}" for i in range(20)])
    r = client.post("/api/v1/embeddings", json=wrong_dim, headers=auth(key))
    assert r.status_code == 422 and "dimension" in r.text
    assert count(engine, Embedding) == 20
    with engine.connect() as conn:
        first = conn.scalar(select(Embedding.vector).where(Embedding.sample_id == "img3"))
    np.testing.assert_array_equal(np.frombuffer(first, "<f4"), m[3])


def test_auth_roles_and_project_isolation(client, make_key):
    a_ingest = make_key("ingest", "A")
    a_read = make_key("read", "A")
    b_read = make_key("read", "B")
    b_ingest = make_key("ingest", "B")
    body = {"events": trace_batch()}
    assert client.post("/api/v1/ingest", json=body).status_code == 401
    assert client.post("/api/v1/ingest", json=body, headers=auth("tt_wrong")).status_code == 401
    assert client.post("/api/v1/ingest", json=body, headers=auth(a_read)).status_code == 403
    assert client.get("/api/v1/traces", headers=auth(a_ingest)).status_code == 403
    assert (
        client.post("/api/v1/ingest", json=body, headers={"x-api-key": a_ingest}).status_code == 200
    )
    # Project B cannot read A's trace, and writing the same ids in B is independent.
    assert client.get("/api/v1/traces/t-1", headers=auth(b_read)).status_code == 404
    assert client.get("/api/v1/traces", headers=auth(b_read)).json()["traces"] == []
    assert client.get("/api/v1/streams", headers=auth(b_read)).json()["streams"] == []
    r = client.post("/api/v1/ingest", json=body, headers=auth(b_ingest)).json()
    assert r["accepted"] == 6 and r["duplicates"] == 0
    assert client.get("/api/v1/traces/t-1", headers=auth(a_read)).json()["agent"] == "planner"


def test_overload_gets_429_with_retry_after(db_url, tmp_path, make_key):
    import asyncio

    from app.admission import FairAdmission, Overloaded

    adm = FairAdmission(max_concurrent=1, max_pending=1, retry_after=2)

    async def scenario() -> list[str]:
        gate = asyncio.Event()
        out: list[str] = []

        async def hold() -> None:
            async with adm.slot():
                await gate.wait()
                out.append("done")

        async def try_one() -> None:
            try:
                async with adm.slot():
                    out.append("ran")
            except Overloaded as exc:
                out.append(f"refused {exc.retry_after}")

        t1 = asyncio.create_task(hold())
        t2 = asyncio.create_task(hold())
        await asyncio.sleep(0)
        await try_one()
        gate.set()
        await asyncio.gather(t1, t2)
        await try_one()
        return out

    assert asyncio.run(scenario()) == ["refused 2", "done", "done", "ran"]


def test_batches_sharing_spans_in_opposite_orders_store_each_span_once(
    live_server, make_key, engine
):
    """Spans claim no event id, so the span table's unique index alone keeps them once,
    also while batches that list the same spans in opposite orders (and under other event
    ids) are written at the same time."""
    key = make_key("ingest")
    N = 1000
    spans = [
        {
            "id": f"ev-{k}-{side}",
            "type": "span",
            "body": {"trace_id": f"shared-{k // 10}", "span_id": f"s{k % 10}", "kind": "tool",
                     "name": "step", "started_at": "2026-01-01T00:00:00Z"},
        }
        for k in range(N)
        for side in ("a",)
    ]  # fmt: skip
    bodies = [
        {"events": spans if i % 2 else [dict(ev, id=ev["id"] + f"-{i}") for ev in spans[::-1]]}
        for i in range(6)
    ]
    answers: list[dict[str, Any]] = []

    def send(body: dict[str, Any]) -> None:
        with httpx.Client(base_url=live_server.url, timeout=60) as c:
            r = c.post("/api/v1/ingest", json=body, headers=auth(key))
            assert r.status_code == 200, r.text
            answers.append(r.json())

    threads = [threading.Thread(target=send, args=(b,)) for b in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answers) == 6
    assert sum(a["accepted"] for a in answers) == N
    assert sum(a["duplicates"] for a in answers) == 5 * N
    assert count(engine, Span) == N


def test_same_span_under_a_new_event_id_is_a_duplicate(client, make_key, engine):
    key = make_key("ingest")
    first = trace_batch()[1:3]
    client.post("/api/v1/ingest", json={"events": first}, headers=auth(key))
    again = [dict(ev, id=ev["id"] + "-retry") for ev in trace_batch()[1:4]]
    r = client.post("/api/v1/ingest", json={"events": again}, headers=auth(key))
    assert r.status_code == 200
    assert r.json() == {"accepted": 1, "duplicates": 2, "rejected": []}
    assert count(engine, Span) == 3


def test_same_span_twice_in_one_batch_is_one_accepted_one_duplicate(client, make_key, engine):
    span = trace_batch()[1]
    twin = dict(span, id="another-event-id")
    r = client.post("/api/v1/ingest", json={"events": [span, twin]}, headers=auth(make_key()))
    assert r.json() == {"accepted": 1, "duplicates": 1, "rejected": []}
    assert count(engine, Span) == 1
