"""Queue CRUD: create, read, update, delete, all scoped to one project."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import case, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.labeling.errors import Conflict, NotFound
from app.labeling.schemas import QueueCreate, QueueUpdate
from app.models.base import utcnow
from app.models.labeling import LabelQueue, QueueItem


def get_queue(session: Session, *, project_id: int, name: str) -> LabelQueue:
    queue = session.scalar(
        select(LabelQueue).where(LabelQueue.project_id == project_id, LabelQueue.name == name)
    )
    if queue is None:
        raise NotFound(f"name: no queue {name!r} in this project")
    return queue


def list_queues(session: Session, *, project_id: int) -> list[LabelQueue]:
    return list(
        session.scalars(
            select(LabelQueue).where(LabelQueue.project_id == project_id).order_by(LabelQueue.name)
        )
    )


def item_counts(session: Session, *, queue_ids: list[int]) -> dict[int, dict[str, int]]:
    """Items per status for each queue (``pending``, ``leased``, ``labeled``, ``skipped``)."""
    out: dict[int, dict[str, int]] = {
        qid: dict.fromkeys(("pending", "leased", "labeled", "skipped"), 0) for qid in queue_ids
    }
    rows = session.execute(
        select(QueueItem.queue_id, QueueItem.status, func.count())
        .where(QueueItem.queue_id.in_(queue_ids))
        .group_by(QueueItem.queue_id, QueueItem.status)
    )
    for qid, status, n in rows:
        out[qid][status] = int(n)
    return out


def create_queue(session: Session, *, project_id: int, body: QueueCreate) -> LabelQueue:
    data = body.model_dump(mode="json", exclude_none=True)
    queue = LabelQueue(project_id=project_id, **data)
    session.add(queue)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise Conflict(f"name: a queue named {body.name!r} already exists") from None
    return queue


def update_queue(session: Session, *, project_id: int, name: str, body: QueueUpdate) -> LabelQueue:
    queue = get_queue(session, project_id=project_id, name=name)
    for field, value in body.model_dump(mode="json", exclude_unset=True).items():
        if value is None:
            continue
        setattr(queue, field, value)
    queue.updated_at = utcnow()
    session.commit()
    return queue


def delete_queue(session: Session, *, project_id: int, name: str) -> None:
    queue = get_queue(session, project_id=project_id, name=name)
    session.delete(queue)
    session.commit()


def progress(
    session: Session, *, queue_ids: list[int], key_id: int | None, now: datetime
) -> dict[int, dict[str, int]]:
    """What the labeling index says of each queue, for the annotator ``key_id``: ``items``,
    ``labeled``, ``skipped``, ``left`` (claimable: pending or a lease past its expiry),
    ``mine`` (live leases of this key) and ``others`` (live leases of other keys, which
    nobody else can claim until they expire)."""
    names = ("items", "labeled", "skipped", "left", "mine", "others")
    out = {qid: dict.fromkeys(names, 0) for qid in queue_ids}
    live = (QueueItem.status == "leased") & (QueueItem.lease_expires_at >= now)
    state = case(
        (QueueItem.status.in_(("labeled", "skipped")), QueueItem.status),
        (live & (QueueItem.leased_by == key_id), "mine"),
        (live, "others"),
        else_="left",
    )
    rows = session.execute(
        select(QueueItem.queue_id, state, func.count())
        .where(QueueItem.queue_id.in_(queue_ids))
        .group_by(QueueItem.queue_id, state)
    )
    for qid, what, n in rows:
        out[qid][what] += int(n)
        out[qid]["items"] += int(n)
    return out
