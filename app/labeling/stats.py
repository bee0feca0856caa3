"""Queue stats: depth, leases, outcomes, and labels per hour per annotator key."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from app.models import ApiKey
from app.models.base import utcnow
from app.models.labeling import Label, LabelQueue, QueueItem

QI = QueueItem


def queue_stats(
    session: Session, *, queue: LabelQueue, now: datetime | None = None, window_hours: float = 24.0
) -> dict[str, Any]:
    """``depth`` counts what a claim could get now: pending items and expired leases."""
    now = now or utcnow()
    rows = session.execute(
        select(QI.status, func.count()).where(QI.queue_id == queue.id).group_by(QI.status)
    ).all()
    counts = dict.fromkeys(("pending", "leased", "expired", "labeled", "skipped"), 0)
    counts.update({status: int(n) for status, n in rows})
    counts["expired"] = int(
        session.scalar(
            select(func.count()).where(
                QI.queue_id == queue.id, QI.status == "leased", QI.lease_expires_at < now
            )
        )
        or 0
    )
    counts["leased"] -= counts["expired"]
    since = now - timedelta(hours=window_hours)
    labels = session.execute(
        select(
            Label.annotator_key_id,
            func.count(),
            func.sum(case((Label.created_at >= since, 1), else_=0)),
            func.min(Label.created_at),
            func.max(Label.created_at),
        )
        .where(Label.queue_id == queue.id)
        .group_by(Label.annotator_key_id)
    ).all()
    skips = dict(
        session.execute(
            select(QI.done_by, func.count())
            .where(QI.queue_id == queue.id, QI.status == "skipped")
            .group_by(QI.done_by)
        ).all()
    )
    key_ids = {r[0] for r in labels} | {k for k in skips if k is not None}
    names = dict(
        session.execute(
            select(ApiKey.id, ApiKey.prefix).where(
                ApiKey.id.in_(key_ids), ApiKey.project_id == queue.project_id
            )
        ).all()
    )
    per_key = {
        key_id: {
            "key_id": key_id,
            "key_prefix": names.get(key_id),
            "labeled": int(total),
            "labeled_in_window": int(recent or 0),
            "labels_per_hour": float(recent or 0) / window_hours,
            "first_label_at": first,
            "last_label_at": last,
            "skipped": int(skips.get(key_id, 0)),
        }
        for key_id, total, recent, first, last in labels
    }
    for key_id, n in skips.items():
        if key_id is not None and key_id not in per_key:
            per_key[key_id] = {
                "key_id": key_id,
                "key_prefix": names.get(key_id),
                "labeled": 0,
                "labeled_in_window": 0,
                "labels_per_hour": 0.0,
                "first_label_at": None,
                "last_label_at": None,
                "skipped": int(n),
            }
    return {
        "queue": queue.name,
        "depth": counts["pending"] + counts["expired"],
        "pending": counts["pending"],
        "leased": counts["leased"],
        "expired_leases": counts["expired"],
        "labeled": counts["labeled"],
        "skipped": counts["skipped"],
        "total": sum(counts.values()),
        "window_hours": window_hours,
        "annotators": sorted(per_key.values(), key=lambda r: -r["labeled"]),
        "last_filled_at": queue.last_filled_at,
        "label_schema": queue.label_schema,
        "now": now,
    }
