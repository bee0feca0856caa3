"""Judge checks: a few labels on judged traces, so that a judge's agreement is measured.

A judge's agreement with the labels (and the correction that prediction-powered estimates
apply) needs traces that carry both a judge score and a label. Labels that a team sends
may never land on judged traces (a judge sampling 10 % of traffic and labels on 5 % meet
on 0.5 %). A queue whose labels are an evaluator's objective (``label_name`` = the
evaluator's ``objective``) therefore takes a share of judged, unlabeled traces while fewer
than :data:`ENOUGH` judged traces of the last week carry a label, stratified by the
judge's verdict (half it passed, half it failed; each half in a fixed pseudo-random order
by trace id), so that both kinds of disagreement are seen.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import exists, func, select
from sqlalchemy.orm import Session

from app.labeling import requests
from app.models import Score
from app.models.evaluators import Evaluation, Evaluator
from app.models.labeling import LabelQueue, QueueItem

ENOUGH = 100
LOOKBACK = timedelta(days=7)
PRIORITY = 1.5  # between a plain pick (1.0 x novelty) and an FM-4 request (boosted)


def _order(trace_id: str) -> bytes:
    return hashlib.sha256(trace_id.encode()).digest()


def _labeled(project_id: int, objective: str) -> Any:
    return exists().where(
        Score.project_id == project_id, Score.trace_id == Evaluation.trace_id,
        Score.name == objective, Score.source.in_(requests.LABEL_SOURCES),
    )  # fmt: skip


def judge_check_traces(
    session: Session, *, queue: LabelQueue, now: datetime, limit: int
) -> list[dict[str, Any]]:
    """Queue rows for judged, unlabeled, not yet queued traces of the evaluators whose
    objective this queue labels, while their agreement rests on too few labels."""
    if limit <= 0 or not requests.takes_traces(queue):
        return []
    pid, since = queue.project_id, now - LOOKBACK
    evaluators = session.scalars(
        select(Evaluator).where(Evaluator.project_id == pid, Evaluator.objective == queue.label_name)
    ).all()
    out: list[dict[str, Any]] = []
    for ev in evaluators:
        judged = (Evaluation.evaluator_id == ev.id, Evaluation.status == "done",
                  Evaluation.finished_at >= since)  # fmt: skip
        checked = session.scalar(
            select(func.count()).where(*judged, _labeled(pid, queue.label_name))
        ) or 0  # fmt: skip
        if checked >= ENOUGH:
            continue
        queued = exists().where(QueueItem.queue_id == queue.id,
                                QueueItem.trace_id == Evaluation.trace_id)  # fmt: skip
        rows = session.execute(
            select(Evaluation.trace_id, Evaluation.version, Evaluation.value, Evaluation.reason,
                   Evaluation.finished_at)
            .where(*judged, ~_labeled(pid, queue.label_name), ~queued)
            .order_by(Evaluation.id.desc())
            .limit(2000)
        ).all()  # fmt: skip
        want = min(limit - len(out), ENOUGH - checked)
        passed = sorted((r for r in rows if (r.value or 0) >= 0.5), key=lambda r: _order(r.trace_id))
        failed = sorted((r for r in rows if (r.value or 0) < 0.5), key=lambda r: _order(r.trace_id))
        picks: list[Any] = []
        while len(picks) < want and (passed or failed):
            for side in (failed, passed):
                if side and len(picks) < want:
                    picks.append(side.pop())
        for r in picks:
            said = (r.reason or "").replace("\n", " ")
            said = said if len(said) <= 80 else said[:77] + "..."
            out.append({
                "sample_key": f"trace:{r.trace_id}", "embedding_id": None, "stream": None,
                "trace_id": r.trace_id, "sample_id": None, "sample_time": r.finished_at,
                "novelty": None, "boost": 1.0, "priority": PRIORITY,
                "reason": (f"judge check: evaluator {ev.name} (v{r.version}) scored "
                           f"{r.value:.2f} ({said!r}); a label here measures how far the "
                           f"judge can be trusted ({checked} of {ENOUGH} checked this week)"),
            })  # fmt: skip
        if len(out) >= limit:
            break
    return out
