"""Claiming with leases: concurrent annotators, expiry, stale tokens, labels and their effects."""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.labeling import claims, writeback
from app.labeling.errors import LeaseConflict
from app.models import Score, Trace
from app.models.labeling import Label, LabelQueue, QueueItem, RejectedLabel
from detectors.ground_truth import label_coverage
from detectors.records import Score as ScoreRecord
from detectors.records import TraceRecord
from tests.app.labeling.test_queues import T0, add_items, project_id, queue_body, seed, trace_event
from tests.conftest import auth


def _queue_id(engine, name="q"):
    with Session(engine) as s:
        return s.scalar(select(LabelQueue.id).where(LabelQueue.name == name))


def test_eight_concurrent_annotators_never_share_a_live_lease(live_server, make_key, engine):
    admin = make_key("admin")
    keys = [make_key("annotate") for _ in range(8)]
    n_items = 40
    with httpx.Client(base_url=live_server.url, timeout=60) as c:
        assert c.post("/api/v1/queues", json=queue_body(), headers=auth(admin)).status_code == 201
    add_items(engine, "q", n_items, pid=project_id(engine))
    handed: list[tuple[int, str, int]] = []  # (item id, token, annotator)
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(len(keys))

    def annotator(k: int) -> None:
        rng = random.Random(k)
        with httpx.Client(base_url=live_server.url, timeout=60, headers=auth(keys[k])) as c:
            start.wait()
            while True:
                r = c.post(
                    "/api/v1/queues/q/claim", json={"n": rng.randint(1, 3), "lease_seconds": 600}
                )
                if r.status_code != 200:
                    errors.append(f"claim {r.status_code} {r.text}")
                    return
                items = r.json()["items"]
                if not items:
                    return
                with lock:
                    handed.extend((it["id"], it["lease_token"], k) for it in items)
                for it in items:
                    token = {"lease_token": it["lease_token"]}
                    if rng.random() < 0.8:
                        r = c.post(
                            f"/api/v1/queue-items/{it['id']}/label",
                            json={**token, "label": rng.choice(["correct", "wrong"])},
                        )
                    else:
                        r = c.post(f"/api/v1/queue-items/{it['id']}/skip", json=token)
                    if r.status_code != 200:
                        errors.append(f"finish {r.status_code} {r.text}")

    threads = [threading.Thread(target=annotator, args=(k,)) for k in range(len(keys))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:3]
    # Leases were long: every item was handed out exactly once, to one annotator.
    counts = Counter(i for i, _, _ in handed)
    assert len(counts) == n_items and max(counts.values()) == 1
    assert len({k for _, _, k in handed}) > 1  # the work really was shared
    with Session(engine) as s:
        statuses = Counter(s.scalars(select(QueueItem.status)))
        n_labels = len(s.scalars(select(Label.id)).all())
    assert set(statuses) <= {"labeled", "skipped"} and sum(statuses.values()) == n_items
    assert n_labels == statuses["labeled"]


def test_expired_leases_are_requeued_and_stale_tokens_conflict(engine, make_key, client):
    admin = make_key("admin")
    client.post("/api/v1/queues", json=queue_body(), headers=auth(admin))
    pid = project_id(engine)
    add_items(engine, "q", 4, pid=pid)
    qid = _queue_id(engine)
    t0 = datetime(2026, 12, 1, tzinfo=UTC)

    def claim(key_id, n, now):
        return claims.claim_items(
            engine, project_id=pid, queue_id=qid, key_id=key_id, n=n, lease_seconds=60, now=now
        )

    first = claim(1, 2, t0)
    assert claim(2, 2, t0 + timedelta(seconds=30)) != first  # live leases are not handed out
    assert claim(2, 2, t0 + timedelta(seconds=31)) == []
    with Session(engine) as s:
        old_token = s.scalar(select(QueueItem.lease_token).where(QueueItem.id == first[0]))
    # Past the lease: the same (highest-priority) items are claimable again.
    again = claim(3, 2, t0 + timedelta(seconds=61))
    assert again == first
    with pytest.raises(LeaseConflict) as exc:
        claims.label_item(
            engine,
            project_id=pid,
            item_id=first[0],
            key_id=1,
            lease_token=old_token,
            label="correct",
            now=t0 + timedelta(seconds=62),
        )
    body = exc.value.body
    assert (
        body["code"] == "lease_taken"
        and "NOT saved" in body["detail"]
        and "claim" in body["detail"].lower()
    )
    assert body["rejected_label"]["label"] == "correct"
    # The reaper puts expired leases back to pending.
    assert claims.reap_expired(engine, now=t0 + timedelta(seconds=100)) == 2  # key 2's leases
    assert claims.reap_expired(engine, now=t0 + timedelta(seconds=200)) == 2  # key 3's leases
    with Session(engine) as s:
        assert set(s.scalars(select(QueueItem.status))) == {"pending"}
        assert s.scalar(select(RejectedLabel.reason)) == "lease_taken"


def test_stale_token_gets_409_and_the_label_is_kept_for_resubmission(client, make_key, engine):
    admin, annot = make_key("admin"), make_key("annotate")
    client.post("/api/v1/queues", json=queue_body(), headers=auth(admin))
    add_items(engine, "q", 2, pid=project_id(engine))
    item = client.post("/api/v1/queues/q/claim", json={"n": 1}, headers=auth(annot)).json()[
        "items"
    ][0]
    with engine.begin() as conn:  # the lease runs out
        conn.execute(
            update(QueueItem).values(lease_expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
    url = f"/api/v1/queue-items/{item['id']}/label"
    r = client.post(
        url,
        json={"lease_token": item["lease_token"], "label": "wrong", "comment": "blurry"},
        headers=auth(annot),
    )
    assert r.status_code == 409
    body = r.json()
    assert (
        body["code"] == "lease_expired"
        and "NOT saved" in body["detail"]
        and "/claim" in body["detail"]
    )
    assert (
        body["rejected_label"]["label"] == "wrong" and body["rejected_label"]["comment"] == "blurry"
    )
    with Session(engine) as s:
        assert s.scalar(select(RejectedLabel.comment)) == "blurry"
        assert s.scalars(select(Label)).all() == []

    # Claim again (it is the top item), resubmit with the new token: saved.
    again = client.post("/api/v1/queues/q/claim", json={"n": 1}, headers=auth(annot)).json()[
        "items"
    ][0]
    assert again["id"] == item["id"] and again["lease_token"] != item["lease_token"]
    r = client.post(
        url, json={"lease_token": item["lease_token"], "label": "wrong"}, headers=auth(annot)
    )
    assert r.status_code == 409 and r.json()["code"] == "lease_taken"
    r = client.post(
        url,
        json={"lease_token": again["lease_token"], "label": "wrong", "comment": "blurry"},
        headers=auth(annot),
    )
    assert r.status_code == 200, r.text
    r = client.post(
        url, json={"lease_token": again["lease_token"], "label": "wrong"}, headers=auth(annot)
    )
    assert r.status_code == 409 and r.json()["code"] == "already_done"
    # skip / release with a stale token: 409 too, nothing changed.
    other = client.post("/api/v1/queues/q/claim", json={"n": 1}, headers=auth(annot)).json()[
        "items"
    ][0]
    ok = {"lease_token": other["lease_token"]}
    assert (
        client.post(
            f"/api/v1/queue-items/{other['id']}/release", json=ok, headers=auth(annot)
        ).status_code
        == 200
    )
    r = client.post(f"/api/v1/queue-items/{other['id']}/skip", json=ok, headers=auth(annot))
    assert r.status_code == 409 and r.json()["code"] == "lease_lost"


def test_labels_outside_the_schema_get_422(client, make_key, engine):
    admin, annot = make_key("admin"), make_key("annotate")
    client.post("/api/v1/queues", json=queue_body(), headers=auth(admin))
    score = queue_body("s", label_schema={"type": "score", "min": 1, "max": 5})
    client.post("/api/v1/queues", json=score, headers=auth(admin))
    pid = project_id(engine)
    add_items(engine, "q", 1, pid=pid)
    add_items(engine, "s", 1, pid=pid)
    cat = client.post("/api/v1/queues/q/claim", json={"n": 1}, headers=auth(annot)).json()["items"][
        0
    ]
    num = client.post("/api/v1/queues/s/claim", json={"n": 1}, headers=auth(annot)).json()["items"][
        0
    ]
    assert num["label_schema"] == {"type": "score", "min": 1.0, "max": 5.0}
    for item, label in ((cat, "maybe"), (cat, 1), (num, 7), (num, "high"), (num, True)):
        r = client.post(
            f"/api/v1/queue-items/{item['id']}/label",
            json={"lease_token": item["lease_token"], "label": label},
            headers=auth(annot),
        )
        assert r.status_code == 422, (label, r.text)
        assert "label" in r.json()["detail"]
    r = client.post(
        f"/api/v1/queue-items/{num['id']}/label",
        json={"lease_token": num["lease_token"], "label": 4.5},
        headers=auth(annot),
    )
    assert r.status_code == 200 and r.json()["label"] == 4.5
    r = client.post("/api/v1/queues/q/claim", json={"n": 0}, headers=auth(annot))
    assert r.status_code == 422 and "n" in r.json()["detail"]


def _records(engine, pid):
    with Session(engine) as s:
        traces = s.scalars(select(Trace).where(Trace.project_id == pid)).all()
        scores = s.scalars(select(Score).where(Score.project_id == pid)).all()
    by_trace: dict[str, list[ScoreRecord]] = {}
    for sc in scores:
        by_trace.setdefault(sc.trace_id, []).append(
            ScoreRecord(sc.name, sc.value, sc.kind, sc.source, sc.created_at.timestamp())
        )
    return [
        TraceRecord(
            trace_id=t.trace_id,
            agent=t.agent,
            agent_version=t.agent_version,
            ended_at=t.ended_at.timestamp(),
            attributes=t.attributes,
            scores=tuple(by_trace.get(t.trace_id, ())),
        )
        for t in traces
    ]


def test_labels_feed_fm4_coverage_stats_and_export(client, make_key, engine):
    admin, annot = make_key("admin"), make_key("annotate")
    client.post("/api/v1/queues", json=queue_body(label_name="success"), headers=auth(admin))
    pid = project_id(engine)
    tids = [f"t{i}" for i in range(4)]
    seed(engine, pid, [trace_event(t, at=T0) for t in tids])
    add_items(engine, "q", 4, pid=pid, traces=tids)
    now = datetime.now(UTC).timestamp() + 60
    assert label_coverage(_records(engine, pid), now)[0]["coverage"] == 0.0

    items = client.post("/api/v1/queues/q/claim", json={"n": 3}, headers=auth(annot)).json()[
        "items"
    ]
    for it, label in zip(items, ["correct", "wrong"], strict=False):
        r = client.post(
            f"/api/v1/queue-items/{it['id']}/label",
            json={"lease_token": it["lease_token"], "label": label},
            headers=auth(annot),
        )
        assert r.status_code == 200 and r.json()["score_written"] is True
    client.post(
        f"/api/v1/queue-items/{items[2]['id']}/skip",
        json={"lease_token": items[2]["lease_token"]},
        headers=auth(annot),
    )

    # The labels landed where FM-4 (and FM-5's success) read them: true/human scores.
    with Session(engine) as s:
        written = s.execute(
            select(Score.trace_id, Score.name, Score.value, Score.kind, Score.source)
        ).all()
    assert sorted(written) == [
        ("t0", "success", 1.0, "true", "human"),
        ("t1", "success", 0.0, "true", "human"),
    ]
    cov = label_coverage(_records(engine, pid), now)[0]
    assert cov["n_labeled"] == 2 and cov["coverage"] == 0.5
    records = {r.trace_id: r for r in _records(engine, pid)}
    assert records["t0"].success and not records["t1"].success

    stats = client.get("/api/v1/queues/q/stats", headers=auth(annot)).json()
    assert (stats["depth"], stats["leased"], stats["labeled"], stats["skipped"]) == (1, 0, 2, 1)
    (row,) = stats["annotators"]
    assert (
        row["labeled"] == 2
        and row["skipped"] == 1
        and row["labels_per_hour"] == pytest.approx(2 / 24)
    )

    r = client.get("/api/v1/queues/q/labels.jsonl", headers=auth(annot))
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in r.text.splitlines()]
    assert [(x["trace_id"], x["label"], x["score_value"]) for x in lines] == [
        ("t0", "correct", 1.0),
        ("t1", "wrong", 0.0),
    ]


def test_failed_score_write_back_is_retried_by_the_reaper(client, make_key, engine, monkeypatch):
    admin, annot = make_key("admin"), make_key("annotate")
    client.post("/api/v1/queues", json=queue_body(), headers=auth(admin))
    pid = project_id(engine)
    seed(engine, pid, [trace_event("t0")])
    add_items(engine, "q", 1, pid=pid, traces=["t0"])
    item = client.post("/api/v1/queues/q/claim", json={"n": 1}, headers=auth(annot)).json()[
        "items"
    ][0]

    def broken(*_a, **_k):
        raise RuntimeError("database went away")

    monkeypatch.setattr(writeback, "write_events", broken)
    r = client.post(
        f"/api/v1/queue-items/{item['id']}/label",
        json={"lease_token": item["lease_token"], "label": "correct"},
        headers=auth(annot),
    )
    assert r.status_code == 200 and r.json()["score_written"] is False
    monkeypatch.undo()
    assert writeback.sync_label_scores(engine) == 1
    assert writeback.sync_label_scores(engine) == 0
    with Session(engine) as s:
        assert s.scalars(select(Score.value)).all() == [1.0]
