"""The labeling index's counts (:func:`app.labeling.queues.progress`), on both databases:
what is left to claim, what this annotator holds, what other annotators hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.keys import get_or_create_project
from app.labeling import queues
from app.labeling.schemas import QueueCreate
from app.models.labeling import QueueItem

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
ME, OTHER = 7, 8


def _queue(s: Session, pid: int, name: str) -> int:
    body = QueueCreate.model_validate({
        "name": name, "selection": {"agents": ["a"]}, "budget_per_period": 10,
        "label_schema": {"type": "categorical", "values": ["ok", "bad"]},
    })  # fmt: skip
    return queues.create_queue(s, project_id=pid, body=body).id


def test_progress_counts_left_mine_and_others_per_queue(engine: Engine) -> None:
    live, gone = NOW + timedelta(minutes=5), NOW - timedelta(seconds=1)
    with Session(engine) as s:
        pid = get_or_create_project(s, name="p1").id
        q1, q2 = _queue(s, pid, "one"), _queue(s, pid, "two")
        states = [
            ("pending", None, None), ("pending", None, None),
            ("leased", ME, live), ("leased", OTHER, live), ("leased", OTHER, live),
            ("leased", OTHER, gone),  # expired: claimable again, so "left"
            ("labeled", None, None), ("labeled", None, None), ("skipped", None, None),
        ]  # fmt: skip
        for i, (status, by, until) in enumerate(states):
            s.add(QueueItem(project_id=pid, queue_id=q1, sample_key=f"k{i}", status=status,
                            leased_by=by, lease_expires_at=until, priority=1.0, boost=1.0,
                            reason=""))  # fmt: skip
        s.add(QueueItem(project_id=pid, queue_id=q2, sample_key="x", status="pending",
                        priority=1.0, boost=1.0, reason=""))  # fmt: skip
        s.commit()
        got = queues.progress(s, queue_ids=[q1, q2], key_id=ME, now=NOW)
        seen_by_other = queues.progress(s, queue_ids=[q1], key_id=OTHER, now=NOW)
    assert got[q1] == {"items": 9, "labeled": 2, "skipped": 1, "left": 3, "mine": 1, "others": 2}
    assert got[q2] == {"items": 1, "labeled": 0, "skipped": 0, "left": 1, "mine": 0, "others": 0}
    assert seen_by_other[q1]["mine"] == 2 and seen_by_other[q1]["others"] == 1
