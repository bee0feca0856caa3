""" "Label examples": an issue's traces sent to a labeling queue, so that a person says
whether the failure hurt the outcome (and FM-4 / FM-5 get labels where failures are).

The newest distinct traces of its stored events go in as trace items, as the judge checks
put theirs (:mod:`app.labeling.judge_checks`): ``trace:<id>`` keys, so a trace already in
the queue is not added twice, at a priority above a plain novelty pick.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from app.labeling.errors import NotFound
from app.labeling.queues import get_queue
from app.models import FailureEvent, FailureIssue
from app.models.labeling import QueueItem

PRIORITY = 1.5  # as a judge check's: above a plain pick (1.0 x novelty)
MAX_EXAMPLES = 100


class NoQueue(ValueError):
    """The queue named is not this project's (the message names the field)."""


def queue_examples(
    session: Session, *, issue: FailureIssue, queue: str, limit: int, now: datetime
) -> tuple[int, int]:
    """Put up to ``limit`` of the issue's newest traces in ``queue``; ``(added, offered)``
    (offered minus added were queued already)."""
    try:
        target = get_queue(session, project_id=issue.project_id, name=queue)
    except NotFound:
        raise NoQueue(f"queue: no labeling queue {queue!r} in this project") from None
    newest = func.max(FailureEvent.at)
    traces = session.execute(
        select(FailureEvent.trace_id, newest).where(FailureEvent.issue_id == issue.id)
        .group_by(FailureEvent.trace_id).order_by(newest.desc(), FailureEvent.trace_id)
        .limit(min(limit, MAX_EXAMPLES))
    ).all()  # fmt: skip
    if not traces:
        return 0, 0
    rows = [{
        "project_id": issue.project_id, "queue_id": target.id, "sample_key": f"trace:{t}",
        "embedding_id": None, "stream": None, "trace_id": t, "sample_id": None,
        "sample_time": at, "novelty": None, "boost": 1.0, "priority": PRIORITY,
        "reason": f"failure issue {issue.id}: {issue.title}"[:500], "status": "pending",
        "created_at": now,
    } for t, at in traces]  # fmt: skip
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    stmt = dialect.insert(QueueItem).on_conflict_do_nothing().returning(QueueItem.id)
    added = len(session.execute(stmt, rows).scalars().all())
    return added, len(rows)
