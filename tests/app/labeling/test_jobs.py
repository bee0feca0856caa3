"""The periodic labeling jobs: listed for the scheduler, fill due queues, reap leases."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.labeling import jobs
from app.labeling.fill import fill_queue
from app.models.labeling import LabelQueue, QueueItem
from app.scheduler.jobs import periodic_jobs
from tests.app.labeling.test_queues import _blobs, project_id, queue_body
from tests.conftest import auth


def test_jobs_are_listed_for_the_scheduler():
    names = {j.name: j.interval_seconds for j in periodic_jobs()}
    assert names["labeling_fill"] == jobs.FILL_EVERY_SECONDS
    assert names["labeling_reaper"] == jobs.REAP_EVERY_SECONDS


def test_fill_job_fills_due_queues_and_reaper_requeues_expired(client, make_key, engine, settings):
    admin, annot = make_key("admin"), make_key("annotate")
    client.post("/api/v1/queues", json=queue_body(reference_size=20), headers=auth(admin))
    _blobs(engine, project_id(engine))
    assert jobs.fill_due_queues(engine, None, settings) == 4
    assert jobs.fill_due_queues(engine, None, settings) == 0  # not due again yet
    items = client.post("/api/v1/queues/q/claim", json={"n": 2}, headers=auth(annot)).json()[
        "items"
    ]
    assert jobs.reap_leases(engine, None, settings) == 0
    with engine.begin() as conn:
        conn.execute(
            update(QueueItem)
            .where(QueueItem.id == items[0]["id"])
            .values(lease_expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
    assert jobs.reap_leases(engine, None, settings) == 1
    stats = client.get("/api/v1/queues/q/stats", headers=auth(annot)).json()
    assert (stats["depth"], stats["leased"]) == (3, 1)


def test_racing_fills_never_enqueue_a_sample_twice(client, make_key, engine):
    admin = make_key("admin")
    client.post("/api/v1/queues", json=queue_body(reference_size=20), headers=auth(admin))
    _blobs(engine, project_id(engine))
    with Session(engine) as s:
        qid = s.scalar(select(LabelQueue.id))
    now = datetime(2026, 12, 1, tzinfo=UTC)
    added: list[int] = []
    barrier = threading.Barrier(4)

    def fill() -> None:
        barrier.wait()
        added.append(fill_queue(engine, queue_id=qid, now=now, backend="numpy").added)

    threads = [threading.Thread(target=fill) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    with Session(engine) as s:
        keys = s.scalars(select(QueueItem.sample_key)).all()
    # Nothing twice, and the period's budget holds even under the race.
    assert len(keys) == len(set(keys)) == sum(added) == 4
