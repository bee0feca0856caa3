"""Which online evaluator wrote each score of a trace, and why: the trace page reads the
``evaluations`` of the trace (evaluator, version, reason) beside its ``scores``.

A score row does not name its evaluator; it is written in the transaction that finishes its
evaluation (:func:`app.evaluators.queue.complete`), with the evaluator's score name, the
evaluation's value and the same time, which is how one is matched to the other here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models.evaluators import Evaluation, Evaluator


@dataclass(frozen=True)
class TraceEvaluation:
    evaluator_id: int
    name: str
    version: int
    score_name: str
    status: str  # done | error
    value: float | None
    reason: str | None
    error: str | None
    finished_at: datetime | None


def trace_evaluations(session: Session, *, project_id: int, trace_id: str) -> list[TraceEvaluation]:
    """The finished evaluations of one trace with their evaluator's name, newest first."""
    rows = session.execute(
        select(Evaluation, Evaluator.name, Evaluator.score_name)
        .join(Evaluator, Evaluator.id == Evaluation.evaluator_id)
        .where(Evaluation.project_id == project_id, Evaluation.trace_id == trace_id,
               Evaluation.status.in_(("done", "error")))
        .order_by(Evaluation.finished_at.desc(), Evaluation.id.desc())
    ).all()  # fmt: skip
    return [TraceEvaluation(e.evaluator_id, name, e.version, score_name, e.status, e.value,
                            e.reason, e.error, e.finished_at) for e, name, score_name in rows]  # fmt: skip


def written_by(score: dict[str, Any], found: Sequence[TraceEvaluation]) -> TraceEvaluation | None:
    """The evaluation that wrote ``score``: same score name, value and time (else the newest
    of the same name and value); None for a score no evaluator wrote."""
    if score.get("source") != "online":
        return None
    same = [e for e in found if e.status == "done" and e.score_name == score["name"]
            and e.value == score["value"]]  # fmt: skip
    at = score.get("created_at")
    return next((e for e in same if e.finished_at == at), same[0] if same else None)
