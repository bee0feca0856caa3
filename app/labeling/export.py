"""Labels as JSON Lines: one object per label, oldest first, streamed in pages."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, select

from app.models.labeling import Label, QueueItem

PAGE = 1000


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def label_lines(
    engine: Engine, *, project_id: int, queue_id: int, queue_name: str
) -> Iterator[str]:
    """JSONL lines; keyset-paginated so a long export holds no transaction open."""
    last_id = 0
    while True:
        with engine.connect() as conn:
            rows = conn.execute(
                select(
                    Label.id,
                    Label.queue_item_id,
                    Label.sample_key,
                    Label.trace_id,
                    Label.value,
                    Label.score_value,
                    Label.comment,
                    Label.annotator_key_id,
                    Label.created_at,
                    QueueItem.stream,
                    QueueItem.sample_id,
                    QueueItem.embedding_id,
                    QueueItem.reason,
                )
                .join(QueueItem, QueueItem.id == Label.queue_item_id)
                .where(
                    Label.project_id == project_id, Label.queue_id == queue_id, Label.id > last_id
                )
                .order_by(Label.id)
                .limit(PAGE)
            ).all()
        if not rows:
            return
        for r in rows:
            record = {
                "queue": queue_name,
                "label_id": r.id,
                "item_id": r.queue_item_id,
                "sample_key": r.sample_key,
                "trace_id": r.trace_id,
                "stream": r.stream,
                "sample_id": r.sample_id,
                "embedding_id": r.embedding_id,
                "label": r.value,
                "score_value": r.score_value,
                "comment": r.comment,
                "annotator_key_id": r.annotator_key_id,
                "created_at": r.created_at,
                "reason": r.reason,
            }
            yield json.dumps(record, default=_default, ensure_ascii=False) + "\n"
        last_id = rows[-1].id
