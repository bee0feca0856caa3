"""Undo: an annotator takes back their last label or skip; the label and its score go."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.models import Score
from app.models.base import utcnow
from app.models.labeling import Label, QueueItem
from tests.app.labeling.test_queues import T0, add_items, project_id, queue_body, seed, trace_event
from tests.conftest import auth


def _claim_and_label(client, key, label="correct"):
    item = client.post("/api/v1/queues/q/claim", json={"n": 1}, headers=auth(key)).json()["items"][
        0
    ]
    r = client.post(
        f"/api/v1/queue-items/{item['id']}/label",
        json={"lease_token": item["lease_token"], "label": label},
        headers=auth(key),
    )
    assert r.status_code == 200 and r.json()["score_written"] is True, r.text
    return item


def test_undo_takes_the_label_and_its_score_back_and_leases_the_item_again(
    client, make_key, engine
):
    admin, annot = make_key("admin"), make_key("annotate")
    client.post("/api/v1/queues", json=queue_body(label_name="success"), headers=auth(admin))
    pid = project_id(engine)
    seed(engine, pid, [trace_event("t0", at=T0), trace_event("t1", at=T0)])
    add_items(engine, "q", 2, pid=pid, traces=["t0", "t1"])
    first = _claim_and_label(client, annot, "wrong")
    second = _claim_and_label(client, annot, "correct")

    r = client.post(f"/api/v1/queue-items/{first['id']}/undo", headers=auth(annot))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["undone"] == "labeled" and body["status"] == "leased"
    assert body["lease_token"] != first["lease_token"]
    with Session(engine) as s:
        scores = s.execute(select(Score.trace_id, Score.value)).all()
        labels = s.scalars(select(Label.queue_item_id)).all()
        item = s.get(QueueItem, first["id"])
        assert item is not None and item.status == "leased" and item.done_by is None
    other = "t1" if first["sample"]["trace"]["trace_id"] == "t0" else "t0"
    assert scores == [(other, 1.0)]  # the other item's label stays
    assert labels == [second["id"]]

    # Answered again under the new lease: one label, one score, the new value.
    r = client.post(
        f"/api/v1/queue-items/{first['id']}/label",
        json={"lease_token": body["lease_token"], "label": "correct"},
        headers=auth(annot),
    )
    assert r.status_code == 200 and r.json()["score_written"] is True, r.text
    with Session(engine) as s:
        assert sorted(v for (v,) in s.execute(select(Score.value))) == [1.0, 1.0]


def test_a_skip_can_be_undone(client, make_key, engine):
    admin, annot = make_key("admin"), make_key("annotate")
    client.post("/api/v1/queues", json=queue_body(), headers=auth(admin))
    add_items(engine, "q", 1, pid=project_id(engine))
    item = client.post("/api/v1/queues/q/claim", json={"n": 1}, headers=auth(annot)).json()[
        "items"
    ][0]
    client.post(
        f"/api/v1/queue-items/{item['id']}/skip",
        json={"lease_token": item["lease_token"]},
        headers=auth(annot),
    )
    r = client.post(f"/api/v1/queue-items/{item['id']}/undo", headers=auth(annot))
    assert r.status_code == 200 and r.json()["undone"] == "skipped", r.text


def test_undo_is_refused_with_a_reason(client, make_key, engine):
    admin, annot, other = make_key("admin"), make_key("annotate"), make_key("annotate")
    client.post("/api/v1/queues", json=queue_body(), headers=auth(admin))
    pid = project_id(engine)
    seed(engine, pid, [trace_event("t0", at=T0)])
    add_items(engine, "q", 2, pid=pid, traces=["t0", "t1"])
    item = _claim_and_label(client, annot)

    r = client.post(f"/api/v1/queue-items/{item['id']}/undo", headers=auth(other))
    assert r.status_code == 409 and r.json()["code"] == "not_yours", r.text
    pending = client.post("/api/v1/queues/q/claim", json={"n": 1}, headers=auth(other)).json()
    leased_id = pending["items"][0]["id"]
    r = client.post(f"/api/v1/queue-items/{leased_id}/undo", headers=auth(other))
    assert r.status_code == 409 and r.json()["code"] == "not_done", r.text
    with Session(engine) as s:  # eleven minutes later
        s.execute(
            update(QueueItem)
            .where(QueueItem.id == item["id"])
            .values(done_at=utcnow() - timedelta(minutes=11))
        )
        s.commit()
    r = client.post(f"/api/v1/queue-items/{item['id']}/undo", headers=auth(annot))
    assert r.status_code == 409 and r.json()["code"] == "undo_window_passed", r.text
    assert "10 minutes" in r.json()["detail"]
    r = client.post("/api/v1/queue-items/999999/undo", headers=auth(annot))
    assert r.status_code == 404 and "id" in r.text
    for role in ("read", "ingest"):
        r = client.post(f"/api/v1/queue-items/{item['id']}/undo", headers=auth(make_key(role)))
        assert r.status_code == 403, (role, r.text)
    r = client.post(f"/api/v1/queue-items/{item['id']}/undo", headers=auth(admin))
    assert r.status_code == 409 and r.json()["code"] == "not_yours", (
        r.text
    )  # admin, not the labeler
