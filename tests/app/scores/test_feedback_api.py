"""POST /api/v1/scores: feedback and delayed ground truth by native or OTel trace id."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from app.models import Score
from tests.conftest import auth

OTEL_ID = "4BF92F3577B34DA6A3CE929D0E0E4736"


def stored(engine: Any) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(
                Score.trace_id,
                Score.name,
                Score.value,
                Score.kind,
                Score.source,
                Score.label,
                Score.explanation,
                Score.created_at,
            ).order_by(Score.id)
        ).mappings()
        return [dict(r) for r in rows]  # fmt: skip


def trace(client: Any, key: str, trace_id: str) -> None:
    r = client.post(
        "/api/v1/ingest",
        headers=auth(key),
        json={"events": [{"id": f"t-{trace_id}", "type": "trace", "body": {"trace_id": trace_id}}]},
    )
    assert r.status_code == 200 and r.json()["accepted"] == 1, r.text


def test_scores_by_native_and_otel_trace_id_are_stored_with_label_and_explanation(
    client, make_key, engine
):
    key = make_key(role="ingest")
    trace(client, key, "native-1")
    trace(client, key, OTEL_ID.lower())  # as the OTLP receiver stores it
    r = client.post(
        "/api/v1/scores",
        headers=auth(key),
        json={
            "scores": [
                {"trace_id": "native-1", "name": "thumbs", "value": 1, "label": "thumbs_up"},
                {
                    "otel_trace_id": OTEL_ID,
                    "name": "resolved",
                    "value": 0.0,
                    "source": "delayed",
                    "kind": "true",
                    "explanation": "ticket reopened",
                    "created_at": "2026-11-30T08:00:00Z",
                },
            ]
        },
    )
    assert r.status_code == 200, r.text
    assert r.json() == {"accepted": 2, "duplicates": 0, "rejected": [], "pending_traces": 0}
    rows = stored(engine)
    assert [(s["trace_id"], s["name"], s["value"], s["kind"], s["source"]) for s in rows] == [
        ("native-1", "thumbs", 1.0, "proxy", "online"),
        (OTEL_ID.lower(), "resolved", 0.0, "true", "delayed"),
    ]
    assert rows[0]["label"] == "thumbs_up" and rows[1]["explanation"] == "ticket reopened"
    assert rows[1]["created_at"].isoformat().startswith("2026-11-30T08:00:00")


def test_resends_are_duplicates_by_event_id_or_by_content_with_created_at(client, make_key, engine):
    key = make_key(role="ingest")
    batch = {
        "scores": [
            {"trace_id": "t1", "name": "csat", "value": 4, "event_id": "fb-1"},
            {"trace_id": "t1", "name": "resolved", "value": 1, "created_at": 1790000000},
        ]
    }
    first = client.post("/api/v1/scores", headers=auth(key), json=batch).json()
    again = client.post("/api/v1/scores", headers=auth(key), json=batch).json()
    assert (first["accepted"], again["accepted"], again["duplicates"]) == (2, 0, 2)
    # Without an event id or a time, each click is its own observation.
    click = {"scores": [{"trace_id": "t1", "name": "thumbs", "value": 1}]}
    for _ in range(2):
        assert client.post("/api/v1/scores", headers=auth(key), json=click).json()["accepted"] == 1
    assert [s["name"] for s in stored(engine)] == ["csat", "resolved", "thumbs", "thumbs"]


def test_a_score_before_its_trace_is_stored_and_counted_pending(client, make_key, engine):
    key = make_key(role="ingest")
    trace(client, key, "known")
    r = client.post(
        "/api/v1/scores",
        headers=auth(key),
        json={
            "scores": [
                {"trace_id": "known", "name": "csat", "value": 5},
                {"trace_id": "later", "name": "csat", "value": 2},
                {"trace_id": "later", "name": "resolved", "value": 0, "source": "delayed"},
            ]
        },
    )
    assert r.status_code == 200, r.text
    assert (r.json()["accepted"], r.json()["pending_traces"]) == (3, 2)
    trace(client, key, "later")
    reader = make_key(role="read")
    got = client.get("/api/v1/traces/later", headers=auth(reader)).json()
    assert sorted(s["name"] for s in got["scores"]) == ["csat", "resolved"]


def test_bad_items_are_rejected_by_name_and_never_poison_the_rest(client, make_key, engine):
    key = make_key(role="ingest")
    good = {"trace_id": "t1", "name": "csat", "value": 3}
    bad: list[Any] = [
        ({"trace_id": "t1", "name": "csat", "value": "high"}, "scores[1].value: must be a number"),
        ({"trace_id": "t1", "value": 1}, "scores[2].name: is required"),
        ({"name": "csat", "value": 1}, "scores[3].trace_id: is required"),
        ({"trace_id": "t1", "name": "x", "value": 1, "source": "judge"}, "scores[4].source:"),
        ({"trace_id": "t1", "name": "x", "value": 1, "kind": "gold"}, "scores[5].kind:"),
        ({"otel_trace_id": "abc", "name": "x", "value": 1}, "scores[6].otel_trace_id: must be 32"),
        ({"otel_trace_id": "0" * 32, "name": "x", "value": 1}, "scores[7].otel_trace_id: is all"),
        ({"trace_id": "t", "otel_trace_id": OTEL_ID, "name": "x", "value": 1}, "scores[8].otel"),
        ({"trace_id": "t1", "name": "x", "value": 1, "lable": "up"}, "scores[9].lable: unknown"),
        ({"trace_id": "t1", "name": "x", "value": 1, "created_at": "soon"}, "scores[10].created"),
        ("thumbs up", "scores[11]: must be an object"),
        ({"trace_id": "t1", "name": "x" * 129, "value": 1}, "scores[12].name: must be at most"),
        ({"trace_id": "t1", "name": "x", "value": 1, "label": "a\x00"}, "scores[13].label:"),
    ]
    body = {"scores": [good, *[b for b, _ in bad]]}
    r = client.post("/api/v1/scores", headers=auth(key), json=body)
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["accepted"] == 1
    errors = {x["index"]: x["error"] for x in answer["rejected"]}
    assert sorted(errors) == list(range(1, len(bad) + 1))
    for i, (_, expected) in enumerate(bad, start=1):
        assert errors[i].startswith(expected), (i, errors[i])
    assert len(stored(engine)) == 1
    # NaN as Python's json writes it: named, not a 500.
    nan = b'{"scores": [{"trace_id": "t1", "name": "x", "value": NaN}]}'
    r = client.post(
        "/api/v1/scores", headers={**auth(key), "content-type": "application/json"}, content=nan
    )
    assert r.status_code == 422 and "scores[0].value: must be finite" in r.text


def test_envelope_errors_auth_and_limits(client, make_key, settings):
    ingest, reader = make_key(role="ingest"), make_key(role="read")
    ok = {"scores": [{"trace_id": "t1", "name": "x", "value": 1}]}
    assert client.post("/api/v1/scores", json=ok).status_code == 401
    assert client.post("/api/v1/scores", headers=auth(reader), json=ok).status_code == 403
    r = client.post("/api/v1/scores", headers=auth(ingest), json={"score": []})
    assert r.status_code == 422 and r.json()["detail"].startswith("scores: required")
    r = client.post(
        "/api/v1/scores",
        headers=auth(ingest),
        content=b"{",
    )
    assert r.status_code == 400
    too_many = {"scores": [ok["scores"][0]] * (settings.max_events_per_batch + 1)}
    r = client.post("/api/v1/scores", headers=auth(ingest), json=too_many)
    assert r.status_code == 413 and "scores:" in r.json()["detail"]
    r = client.post("/api/v1/scores", headers=auth(ingest), json={"scores": [{"value": 1}]})
    assert r.status_code == 422 and "scores[0].trace_id: is required" in r.text


def test_scores_stay_in_their_project(client, make_key, engine):
    mine, theirs = make_key(role="ingest", project="p1"), make_key(role="admin", project="p2")
    trace(client, mine, "t1")
    client.post(
        "/api/v1/scores",
        headers=auth(mine),
        json={"scores": [{"trace_id": "t1", "name": "x", "value": 1}]},
    )
    r = client.post(
        "/api/v1/scores",
        headers=auth(theirs),
        json={"scores": [{"trace_id": "t1", "name": "x", "value": 1}]},
    )
    assert r.json()["pending_traces"] == 1  # p2 has no trace t1
    assert client.get("/api/v1/traces/t1", headers=auth(theirs)).status_code == 404
