"""Annotator work on queue items: claim with a lease, label, skip, release; reap expired leases.

Claiming picks the highest-priority claimable rows, then leases them, through
:func:`app.db.claim_rows` (``SKIP LOCKED`` on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite),
so no row is handed to two live leases. A lease past ``lease_expires_at`` is claimable
again; the reaper also puts such rows back to ``pending`` for the stats.
"""

from __future__ import annotations

import logging
import secrets
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, and_, bindparam, insert, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from app.db import claim_rows, write_transaction
from app.labeling.errors import Invalid, LeaseConflict, NotFound
from app.labeling.schemas import LabelOutsideSchema, check_label
from app.labeling.writeback import write_label_score
from app.models.base import utcnow
from app.models.labeling import Label, LabelQueue, QueueItem, RejectedLabel

log = logging.getLogger("telltale.labeling")
QI = QueueItem


# A queue item's lease columns when no one holds it (released, reaped, or answered).
NO_LEASE: dict[str, Any] = {"lease_token": None, "leased_by": None, "lease_expires_at": None}


def leased_to(key_id: int, token: Any, expires: datetime) -> dict[str, Any]:
    """A queue item's columns while ``key_id`` holds it under ``token`` (a claim, an undo)."""
    return {
        "status": "leased",
        "lease_token": token,
        "leased_by": key_id,
        "lease_expires_at": expires,
    }


def _claimable(now: datetime) -> Any:
    return or_(QI.status == "pending", and_(QI.status == "leased", QI.lease_expires_at < now))


def _for_update(q: Any, conn: Connection) -> Any:
    # Lock only the item rows (``OF``): locking the joined queue row would serialise
    # every annotator of the queue.
    if conn.dialect.name != "postgresql":
        return q
    return q.with_for_update(of=QI.__table__)


def claim_items(
    engine: Engine,
    *,
    project_id: int,
    queue_id: int,
    key_id: int,
    n: int,
    lease_seconds: int,
    now: datetime | None = None,
) -> list[int]:
    """Lease up to ``n`` items in priority order; return their ids (highest priority first)."""
    now = now or utcnow()
    expires = now + timedelta(seconds=lease_seconds)
    with write_transaction(engine) as conn:
        pick = (
            select(QI.id)
            .where(QI.queue_id == queue_id, QI.project_id == project_id, _claimable(now))
            .order_by(QI.priority.desc(), QI.id)
            .limit(n)
        )
        ids = [row.id for row in claim_rows(conn, pick, of=QI.__table__)]
        if ids:
            conn.execute(
                update(QI)
                .where(QI.id == bindparam("b_id"))
                .values(**leased_to(key_id, bindparam("b_token"), expires), claims=QI.claims + 1),
                [{"b_id": i, "b_token": secrets.token_urlsafe(24)} for i in ids],
            )
    return ids


def claimed_items(session: Session, *, ids: list[int]) -> list[QueueItem]:
    """The items ``claim_items`` returned, in its order (highest priority first)."""
    rows = {i.id: i for i in session.scalars(select(QI).where(QI.id.in_(ids)))}
    return [rows[i] for i in ids]


def _lease_problem(item: Any, token: str, now: datetime) -> tuple[str, str] | None:
    """Why ``token`` no longer holds the lease on ``item``: (code, explanation), or None."""
    if item.status in ("labeled", "skipped"):
        return "already_done", f"the item was already {item.status}"
    if item.status == "pending":
        return "lease_lost", "your lease ended (expired or released) and the item was re-queued"
    if item.lease_token != token:
        return (
            "lease_taken",
            "the item is leased under another token (your lease expired and it was claimed again, or the token is not this item's)",
        )
    if item.lease_expires_at is not None and item.lease_expires_at < now:
        return (
            "lease_expired",
            f"your lease expired at {item.lease_expires_at.isoformat()} and the item is claimable again",
        )
    return None


def _load(conn: Connection, *, project_id: int, item_id: int) -> Any:
    row = conn.execute(
        _for_update(
            select(
                QI.__table__,
                LabelQueue.label_schema,
                LabelQueue.label_name,
                LabelQueue.name.label("queue_name"),
            )
            .join(LabelQueue, LabelQueue.id == QI.queue_id)
            .where(QI.id == item_id, QI.project_id == project_id),
            conn,
        )
    ).first()
    if row is None:
        raise NotFound(f"id: no queue item {item_id} in this project")
    return row


def label_item(
    engine: Engine,
    *,
    project_id: int,
    item_id: int,
    key_id: int,
    lease_token: str,
    label: Any,
    comment: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Store a label for a leased item. A lost lease raises ``LeaseConflict`` (409): the label
    is kept in ``rejected_labels`` and returned in the answer so it can be resubmitted."""
    now = now or utcnow()
    conflict: dict[str, Any] | None = None
    with write_transaction(engine) as conn:
        row = _load(conn, project_id=project_id, item_id=item_id)
        item = row
        try:
            value, score_value = check_label(row.label_schema, label)
        except LabelOutsideSchema as exc:
            raise Invalid(str(exc)) from None
        problem = _lease_problem(item, lease_token, now)
        # The answer as both tables keep it: a kept label, or a refused one to resubmit.
        answer = {
            "project_id": project_id,
            "queue_item_id": item_id,
            "value": value,
            "comment": comment,
            "annotator_key_id": key_id,
            "created_at": now,
        }
        if problem is not None:
            rejected_id = conn.execute(
                insert(RejectedLabel)
                .values(**answer, lease_token=lease_token, reason=problem[0])
                .returning(RejectedLabel.id)
            ).scalar_one()
            conflict = {
                "detail": f"{problem[1]}; your label was NOT saved to the item. "
                + _what_to_do(problem[0], row.queue_name),
                "code": problem[0],
                "item_id": item_id,
                "rejected_label": {"id": rejected_id, "label": value, "comment": comment},
            }
        else:
            label_id = conn.execute(
                insert(Label)
                .values(
                    **answer,
                    queue_id=item.queue_id,
                    sample_key=item.sample_key,
                    trace_id=item.trace_id,
                    score_value=score_value,
                    score_synced=False,
                )
                .returning(Label.id)
            ).scalar_one()
            _finish(conn, item_id, "labeled", key_id, now)
    if conflict is not None:
        raise LeaseConflict(conflict)
    synced = False
    if item.trace_id and score_value is not None:
        synced = write_label_score(
            engine,
            project_id=project_id,
            label_id=label_id,
            trace_id=item.trace_id,
            name=row.label_name,
            value=score_value,
            at=now,
        )
    return {
        "id": label_id,
        "item_id": item_id,
        "label": value,
        "score_value": score_value,
        "score_written": synced,
        "created_at": now,
    }


def _what_to_do(code: str, queue: str) -> str:
    if code == "already_done":
        return "Nothing to redo: claim the next items."
    return (
        f"Claim again (POST /api/v1/queues/{queue}/claim) and resubmit the label in "
        "'rejected_label' with the new lease_token."
    )


def _finish(conn: Connection, item_id: int, status: str, key_id: int, now: datetime) -> None:
    conn.execute(
        update(QI)
        .where(QI.id == item_id)
        .values(status=status, done_by=key_id, done_at=now, **NO_LEASE)
    )


def end_lease(
    engine: Engine,
    *,
    project_id: int,
    item_id: int,
    key_id: int,
    lease_token: str,
    action: str,
    now: datetime | None = None,
) -> dict[str, Any]:
    """``skip`` (done, no label) or ``release`` (back to pending for someone else)."""
    now = now or utcnow()
    with write_transaction(engine) as conn:
        row = _load(conn, project_id=project_id, item_id=item_id)
        problem = _lease_problem(row, lease_token, now)
        if problem is None:
            if action == "skip":
                _finish(conn, item_id, "skipped", key_id, now)
            else:
                conn.execute(
                    update(QI).where(QI.id == item_id).values(status="pending", **NO_LEASE)
                )
    if problem is not None:
        raise LeaseConflict(
            {
                "detail": f"{problem[1]}; nothing was changed. Claim the next items.",
                "code": problem[0],
                "item_id": item_id,
            }
        )
    return {"item_id": item_id, "status": "skipped" if action == "skip" else "pending"}


def reap_expired(engine: Engine, *, now: datetime | None = None) -> int:
    """Put every lease past its expiry back to ``pending``; return how many."""
    now = now or utcnow()
    with write_transaction(engine) as conn:
        res = conn.execute(
            update(QI)
            .where(QI.status == "leased", QI.lease_expires_at < now)
            .values(status="pending", **NO_LEASE)
        )
    return int(res.rowcount or 0)
