"""Retention of what is derived from a project's traces but not keyed by them: the
per-bucket rollups (:mod:`app.rollups`) and the online evaluators' evaluations.

Rollups go by their bucket (trace start time): a bucket wholly before the cutoff counts
traces that retention has deleted or will, and a 30-day preview or an agent page must not
show counts whose traces are gone. Their dirty marks go with them (a mark on an expired
bucket would rebuild it from nothing). Evaluations go by when they were queued: a pending
one for an expired trace has nothing left to judge, a done one's score was deleted with
the scores. Deletes are batched by bucket (the rollup tables' keys are composite) and by
id, each batch its own write transaction, as the rest of retention.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, delete, select

from app.db import write_transaction
from app.models import (
    Evaluation,
    ModelRollup,
    RollupDirty,
    ScoreRollup,
    ToolRollup,
    TraceRollup,
    UserRollup,
)
from app.rollups.buckets import floor_epoch

ROLLUP_TABLES: tuple[Any, ...] = (
    TraceRollup, ToolRollup, ModelRollup, ScoreRollup, UserRollup, RollupDirty,
)  # fmt: skip
BUCKETS_PER_BATCH = 24  # two hours of five-minute buckets: a few thousand rollup rows


def purge_rollups(
    engine: Engine, *, project_id: int, cutoff: datetime, pause_s: float = 0.0
) -> dict[str, int]:
    """Delete the project's rollup rows and marks of buckets that end before ``cutoff``."""
    before = floor_epoch(cutoff.timestamp())  # the first bucket not wholly expired
    counts: dict[str, int] = {}
    for model in ROLLUP_TABLES:
        counts[model.__tablename__] = 0
        pick = (
            select(model.bucket)
            .where(model.project_id == project_id, model.bucket < before)
            .distinct()
            .order_by(model.bucket)
            .limit(BUCKETS_PER_BATCH)
        )
        while True:
            with write_transaction(engine) as conn:
                buckets = list(conn.scalars(pick))
                if buckets:
                    done = conn.execute(
                        delete(model).where(
                            model.project_id == project_id, model.bucket.in_(buckets)
                        )
                    )
                    counts[model.__tablename__] += int(done.rowcount or 0)
            if len(buckets) < BUCKETS_PER_BATCH:
                break
            time.sleep(pause_s)
    return counts


def evaluations_expired(project_id: int, cutoff: datetime) -> tuple[str, Any, Any]:
    """The plan :func:`app.retention.purge.purge_project` runs for evaluations."""
    return (
        "evaluations",
        Evaluation.id,
        (Evaluation.project_id == project_id) & (Evaluation.created_at < cutoff),
    )
