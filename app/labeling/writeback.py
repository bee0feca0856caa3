"""Labels written back as scores, so FM-4 (coverage, estimates) and FM-5 (success) read them."""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import Engine, select, update

from app.db import write_transaction
from app.ingest.events import ValidEvent
from app.ingest.store import write_events
from app.models.labeling import Label, LabelQueue

log = logging.getLogger("telltale.labeling")


def write_label_score(
    engine: Engine,
    *,
    project_id: int,
    label_id: int,
    trace_id: str,
    name: str,
    value: float,
    at: datetime,
) -> bool:
    """Write the label back as a ``true``/``human`` score (what FM-4 and FM-5 read).

    Goes through the ingest write path with event id ``label:<id>``, so a retry after a
    crash between the label commit and this write is a duplicate, never a second score.
    """
    event = ValidEvent(
        0,
        f"label:{label_id}",
        "score",
        {
            "trace_id": trace_id,
            "name": name,
            "value": value,
            "kind": "true",
            "source": "human",
            "created_at": at,
        },
    )
    try:
        write_events(engine, project_id=project_id, events=[event])
    except Exception:
        log.exception("label %s: writing the score back failed; the reaper will retry", label_id)
        return False
    with write_transaction(engine) as conn:
        conn.execute(update(Label).where(Label.id == label_id).values(score_synced=True))
    return True


def sync_label_scores(engine: Engine, *, limit: int = 500) -> int:
    """Retry score write-backs that did not complete; return how many were written."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(
                Label.id,
                Label.project_id,
                Label.trace_id,
                Label.score_value,
                Label.created_at,
                LabelQueue.label_name,
            )
            .join(LabelQueue, LabelQueue.id == Label.queue_id)
            .where(
                Label.score_synced.is_(False),
                Label.trace_id.is_not(None),
                Label.score_value.is_not(None),
            )
            .order_by(Label.id)
            .limit(limit)
        ).all()
    done = 0
    for r in rows:
        done += write_label_score(
            engine,
            project_id=r.project_id,
            label_id=r.id,
            trace_id=r.trace_id,
            name=r.label_name,
            value=r.score_value,
            at=r.created_at,
        )
    return done
