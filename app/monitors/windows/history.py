"""How far back a project's data reaches: the bound a lagged baseline cannot reach past.

The default monitors compare today's hours with yesterday's (a 22-hour lag,
:mod:`app.monitors.defaults`), which needs more than a day of data. A young project
(a fresh install, a new agent) has less: rather than report ``insufficient_data`` for its
first 28 hours, :meth:`app.monitors.decision.baseline.BaselinePolicy.rolling_end` uses the short
lag (one current window) until the full lag fits. The switch depends only on when data
began, never on their values, so the reference it picks is as clean as any other period
the monitor has not alerted on.

Both lookups are index seeks: ``traces`` by ``(project_id, started_at)``, embeddings by
``(project_id, stream, created_at)`` once per stream the project has (a project-wide
``min`` would scan every vector of the project on PostgreSQL, which cannot skip-scan).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db import as_utc
from app.models import Embedding, EmbeddingStream, Trace
from app.models.evaluators import Evaluator


def history_start(session: Session, *, project_id: int) -> datetime | None:
    """The earliest trace start or vector time of the project; ``None`` with no data."""
    found: list[datetime] = []
    first_trace = session.scalar(
        select(func.min(Trace.started_at)).where(Trace.project_id == project_id)
    )
    if first_trace is not None:
        found.append(as_utc(first_trace))
    streams = session.scalars(
        select(EmbeddingStream.name).where(EmbeddingStream.project_id == project_id)
    )
    for stream in streams:
        first = session.scalar(
            select(func.min(Embedding.created_at)).where(
                Embedding.project_id == project_id, Embedding.stream == stream
            )
        )
        if first is not None:
            found.append(as_utc(first))
    return min(found) if found else None


def judges_an_objective(session: Session, *, project_id: int) -> bool:
    """Whether an enabled online evaluator of the project predicts an objective: what a
    monitor's young windows wait for (:func:`app.monitors.decision.baseline.policy_in_force`)."""
    found = session.scalar(
        select(Evaluator.id)
        .where(
            Evaluator.project_id == project_id,
            Evaluator.enabled.is_(True),
            Evaluator.objective.is_not(None),
        )
        .limit(1)
    )
    return found is not None
