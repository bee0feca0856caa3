"""Bulk vectors as a binary body (a JSON header line, then raw little-endian values) and
the columnar write path both bulk bodies share, on SQLite and PostgreSQL."""

from __future__ import annotations

import gzip
from typing import Any

import numpy as np
import orjson
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.ingest.vectors import BINARY_TYPE
from app.main import create_app
from app.models import Embedding, IngestEvent
from tests.conftest import auth

DIM = 8


def binary(header: dict[str, Any], values: np.ndarray | bytes) -> bytes:
    data = values if isinstance(values, bytes) else values.tobytes()
    return orjson.dumps(header) + b"\n" + data


def post(client, key: str, body: bytes, **headers: str):
    return client.post(
        "/api/v1/embeddings",
        content=body,
        headers={**auth(key), "Content-Type": BINARY_TYPE, **headers},
    )


def stored(engine) -> dict[str, np.ndarray]:
    with engine.connect() as conn:
        rows = conn.execute(select(Embedding.sample_id, Embedding.vector)).all()
    return {sid: np.frombuffer(vec, "<f4") for sid, vec in rows}


def test_binary_body_stores_the_vectors_and_resends_are_duplicates(client, make_key, engine):
    key = make_key("ingest")
    m = np.random.default_rng(0).standard_normal((50, DIM)).astype("<f4")
    header = {
        "stream": "vlm.image",
        "model": "ViT-B-32",
        "dim": DIM,
        "sample_ids": [f"img{i}" for i in range(50)],
        "trace_ids": [f"t{i}" if i % 2 else None for i in range(50)],
    }
    r = post(client, key, binary(header, m))
    assert r.status_code == 200 and r.json() == {"accepted": 50, "duplicates": 0, "rejected": []}
    assert post(client, key, binary(header, m)).json() == {
        "accepted": 0,
        "duplicates": 50,
        "rejected": [],
    }
    vectors = stored(engine)
    assert len(vectors) == 50
    np.testing.assert_array_equal(vectors["img7"], m[7])
    with engine.connect() as conn:
        row = conn.execute(
            select(Embedding.trace_id, Embedding.model, Embedding.dim).where(
                Embedding.sample_id == "img3"
            )
        ).one()
    assert tuple(row) == ("t3", "ViT-B-32", DIM)


def test_binary_float16_and_gzip_bodies(client, make_key, engine):
    key = make_key("ingest")
    m = np.random.default_rng(1).standard_normal((4, DIM)).astype("<f2")
    header = {"stream": "s", "dim": DIM, "dtype": "float16", "ids": ["a", "b", "c", "d"]}
    body = gzip.compress(binary(header, m))
    r = post(client, key, body, **{"Content-Encoding": "gzip"})
    assert r.status_code == 200 and r.json()["accepted"] == 4, r.text
    with engine.connect() as conn:
        n = conn.scalar(select(func.count()).select_from(Embedding))
        first = conn.scalar(select(Embedding.vector).limit(1))
    assert n == 4
    assert np.frombuffer(first, "<f4").dtype == np.float32


def test_json_and_binary_bodies_store_the_same_rows(client, make_key, engine):
    """The two bodies are two spellings of one batch: same rows, same event ids."""
    key = make_key("ingest")
    m = np.random.default_rng(2).standard_normal((3, DIM)).astype("<f4")
    json_body = {"stream": "s", "vectors": m.tolist(), "sample_ids": ["x", "y", "z"]}
    assert (
        client.post("/api/v1/embeddings", json=json_body, headers=auth(key)).json()["accepted"] == 3
    )
    # Same default ids (<stream>:<sample_id>): the binary re-send is all duplicates.
    header = {"stream": "s", "dim": DIM, "sample_ids": ["x", "y", "z"]}
    assert post(client, key, binary(header, m)).json()["duplicates"] == 3
    with engine.connect() as conn:
        ids = set(conn.scalars(select(IngestEvent.event_id)))
    assert ids == {"s:x", "s:y", "s:z"}


def test_repeated_ids_in_one_batch_keep_the_first(client, make_key, engine):
    key = make_key("ingest")
    m = np.arange(3 * DIM, dtype="<f4").reshape(3, DIM)
    header = {"stream": "s", "dim": DIM, "ids": ["a", "b", "a"], "sample_ids": ["1", "2", "3"]}
    r = post(client, key, binary(header, m))
    assert r.json() == {"accepted": 2, "duplicates": 1, "rejected": []}
    assert set(stored(engine)) == {"1", "2"}
    # A later batch with one new id and one stored: only the new one is written.
    header = {"stream": "s", "dim": DIM, "ids": ["b", "c"], "sample_ids": ["4", "5"]}
    assert post(client, key, binary(header, m[:2])).json() == {
        "accepted": 1,
        "duplicates": 1,
        "rejected": [],
    }
    assert set(stored(engine)) == {"1", "2", "5"}


def test_a_batch_of_another_dim_than_its_stream_is_refused_whole(client, make_key, engine):
    key = make_key("ingest")
    header = {"stream": "s", "dim": DIM, "ids": ["a"]}
    post(client, key, binary(header, np.ones((1, DIM), "<f4")))
    wrong = {"stream": "s", "dim": 4, "ids": ["b", "c"]}
    r = post(client, key, binary(wrong, np.ones((2, 4), "<f4")))
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert detail["message"].startswith("body.dim: dimension 4 does not match stream 's' (dim 8)")
    assert detail["accepted"] == 0 and len(detail["rejected"]) == 2
    with engine.connect() as conn:
        assert set(conn.scalars(select(IngestEvent.event_id))) == {"a"}  # b, c not claimed
    assert len(stored(engine)) == 1


OK_HEADER = {"stream": "s", "dim": 2, "sample_ids": ["a", "b"]}
TWO = np.array([[0.1, 0.2], [0.3, 0.4]], "<f4")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (orjson.dumps(OK_HEADER) + TWO.tobytes(), "header"),  # no newline
        (b"{not json\n" + TWO.tobytes(), "header"),
        (b"[1, 2]\n" + TWO.tobytes(), "header"),
        (binary({**OK_HEADER, "vectors_b64": "AAAA"}, TWO), "header.vectors_b64"),
        (binary({"stream": "s", "sample_ids": ["a", "b"]}, TWO), "header.dim"),
        (binary({**OK_HEADER, "dim": 10_000}, TWO), "header.dim"),
        (binary({**OK_HEADER, "dtype": "float64"}, TWO), "header.dtype"),
        (binary(OK_HEADER, TWO.tobytes()[:-1]), "body"),
        (binary(OK_HEADER, b""), "body"),
        (binary(OK_HEADER, np.array([[0.1, 0.2], [np.nan, 0.4]], "<f4")), "body.vectors[1]"),
        (binary({**OK_HEADER, "stream": ""}, TWO), "header.stream"),
        (binary({**OK_HEADER, "sample_ids": ["a"]}, TWO), "header.sample_ids"),
        (binary({**OK_HEADER, "sample_ids": ["a", "b\x00"]}, TWO), "header.sample_ids[1]"),
        (binary({**OK_HEADER, "sample_ids": ["a", "é" * 129]}, TWO), "header.sample_ids[1]"),
        (binary({**OK_HEADER, "ids": ["a", 2.5]}, TWO), "header.ids[1]"),
        (binary({"stream": "s", "dim": 2}, TWO), "header.ids"),
        (
            binary({**OK_HEADER, "stream": "s" * 100, "sample_ids": ["a", "b" * 120]}, TWO),
            "header.sample_ids[1]",
        ),
    ],
)
def test_bad_binary_bodies_are_refused_by_name(client, make_key, engine, body, field):
    r = post(client, make_key("ingest"), body)
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith(field + ":"), r.text
    assert stored(engine) == {}


def test_more_vectors_than_a_batch_may_hold_are_refused(settings, make_key):
    few = settings.model_copy(update={"max_events_per_batch": 8})
    header = {"stream": "s", "dim": 1, "ids": [str(i) for i in range(9)]}
    with TestClient(create_app(few, start_background=False)) as small:
        r = post(small, make_key("ingest"), binary(header, np.ones((9, 1), "<f4")))
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith("body.vectors: 9 vectors exceed the limit of 8")
