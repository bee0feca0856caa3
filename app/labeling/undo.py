"""Undo an annotator's last answer: the item comes back to them, leased, to answer again.

An annotator who pressed the wrong key wants the item back at once, not a support ticket.
Only the key that labeled or skipped the item may undo it, and only for ``UNDO_WINDOW``
after it did: later, others may have read the label (an export, a monitor run), and a
correction is a new label on a new claim. Undoing a label deletes it and the ``true`` score
it wrote back for the trace, so the monitors never read an answer the annotator withdrew.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, delete, select, update

from app.db import write_transaction
from app.labeling.claims import leased_to
from app.labeling.errors import LeaseConflict, NotFound
from app.models import Score
from app.models.base import utcnow
from app.models.labeling import Label, LabelQueue, QueueItem

UNDO_WINDOW = timedelta(minutes=10)


def undo_item(
    engine: Engine, *, project_id: int, item_id: int, key_id: int, now: datetime | None = None
) -> dict[str, Any]:
    """Put a labeled or skipped item back under a new lease for the key that finished it;
    returns the item id, the new lease and what was undone. Raises ``LeaseConflict`` (409)
    when the item is not this key's to undo, or the window has passed."""
    now = now or utcnow()
    with write_transaction(engine) as conn:
        row = conn.execute(
            select(
                QueueItem.status,
                QueueItem.done_by,
                QueueItem.done_at,
                QueueItem.trace_id,
                LabelQueue.lease_seconds,
                LabelQueue.label_name,
            )  # fmt: skip
            .join(LabelQueue, LabelQueue.id == QueueItem.queue_id)
            .where(QueueItem.id == item_id, QueueItem.project_id == project_id)
        ).first()
        if row is None:
            raise NotFound(f"id: no queue item {item_id} in this project")
        problem = _undo_problem(row, key_id, now)
        if problem is not None:
            raise LeaseConflict({"detail": problem[1], "code": problem[0], "item_id": item_id})
        if row.status == "labeled":
            if row.trace_id:  # the scores written back (app.labeling.writeback)
                written = select(Label.created_at).where(Label.queue_item_id == item_id)
                conn.execute(
                    delete(Score).where(
                        Score.project_id == project_id, Score.trace_id == row.trace_id,
                        Score.name == row.label_name, Score.source == "human",
                        Score.created_at.in_(written),
                    )
                )  # fmt: skip
            conn.execute(delete(Label).where(Label.queue_item_id == item_id))
        token = secrets.token_urlsafe(24)
        expires = now + timedelta(seconds=row.lease_seconds)
        conn.execute(
            update(QueueItem)
            .where(QueueItem.id == item_id)
            .values(**leased_to(key_id, token, expires), done_by=None, done_at=None)
        )
    return {"item_id": item_id, "undone": row.status, "status": "leased",
            "lease_token": token, "lease_expires_at": expires}  # fmt: skip


def _undo_problem(row: Any, key_id: int, now: datetime) -> tuple[str, str] | None:
    if row.status not in ("labeled", "skipped"):
        return "not_done", f"the item is {row.status}: there is no answer to undo"
    if row.done_by != key_id:
        return "not_yours", "another annotator answered this item; only they can undo it"
    if row.done_at is None or row.done_at < now - UNDO_WINDOW:
        minutes = int(UNDO_WINDOW.total_seconds() // 60)
        return (
            "undo_window_passed",
            f"answers can be undone for {minutes} minutes; label the trace again from a new claim",
        )
    return None
