"""How far a judge can be trusted: its agreement with the labels of the objective it
predicts, per evaluator version, over the traces that carry both (a week by default).

The statistics are :mod:`detectors.judge_agreement`'s (accuracy with its Wilson interval,
Cohen's kappa with its standard error, the confusion matrix, the bias with its interval;
mean absolute error and Spearman for a continuous objective); what is read here is which
traces carry both, with the project's score roles deciding what a label is (the latest
label of a trace counts).
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.orm import Session

from app.models import Score
from app.models.evaluators import Evaluation, Evaluator
from app.response_model import ResponseModel
from app.scores.roles import get_roles, is_label
from detectors.judge_agreement import judge_agreement


class BinaryAgreementOut(ResponseModel):
    """``confusion[label][judge]`` counts traces (0 = fail); kappa is None when both give one
    category only."""

    n: int
    accuracy: float
    accuracy_interval: tuple[float, float]
    kappa: float | None
    kappa_standard_error: float | None
    kappa_interval: tuple[float, float] | None
    confusion: tuple[tuple[int, int], tuple[int, int]]
    bias: float
    bias_interval: tuple[float, float]
    threshold: float


class ContinuousAgreementOut(ResponseModel):
    n: int
    mean_absolute_error: float
    bias: float
    bias_interval: tuple[float, float]
    spearman: float | None


class VersionAgreement(ResponseModel):
    version: int
    judged: int
    labeled: int
    agreement: BinaryAgreementOut | ContinuousAgreementOut | None


class AgreementOut(ResponseModel):
    objective: str | None
    since: str
    versions: list[VersionAgreement]


def agreement(session: Session, ev: Evaluator, *, now: datetime, days: float = 7.0) -> AgreementOut:
    """Per version: traces judged, traces judged and labeled, and the agreement (None when
    fewer than two carry both, or the evaluator predicts no objective)."""
    since = now - timedelta(days=days)
    out: dict[str, Any] = {"objective": ev.objective, "since": since.isoformat(), "versions": []}
    judged = session.execute(
        select(Evaluation.version, Evaluation.trace_id, Evaluation.value)
        .where(Evaluation.evaluator_id == ev.id, Evaluation.status == "done",
               Evaluation.finished_at >= since)
    ).all()  # fmt: skip
    labels: dict[str, float] = {}
    if ev.objective:
        roles = get_roles(session, project_id=ev.project_id)
        rows = session.execute(
            select(Score.trace_id, Score.value)
            .join(Evaluation, and_(Evaluation.project_id == Score.project_id,
                                   Evaluation.trace_id == Score.trace_id))
            .where(Score.project_id == ev.project_id, Score.name == ev.objective,
                   is_label(roles), Evaluation.evaluator_id == ev.id,
                   Evaluation.status == "done", Evaluation.finished_at >= since)
            .order_by(Score.id)
        ).all()  # fmt: skip
        labels = {tid: float(v) for tid, v in rows}  # the latest label of each trace wins
    for version in sorted({v for v, _, _ in judged}, reverse=True):
        pairs = [(labels[t], float(f)) for v, t, f in judged
                 if v == version and t in labels and f is not None]  # fmt: skip
        stats = judge_agreement([y for y, _ in pairs], [f for _, f in pairs]) if pairs else None
        out["versions"].append({
            "version": version,
            "judged": sum(1 for v, _, _ in judged if v == version),
            "labeled": len(pairs),
            "agreement": None if stats is None else asdict(stats),
        })  # fmt: skip
    return AgreementOut.model_validate(out)
