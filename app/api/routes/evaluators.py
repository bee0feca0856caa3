"""Online evaluators: CRUD, a test on one trace, an explicit backfill (estimate first),
and each version's evaluations (:mod:`app.evaluators`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query, Response
from pydantic import ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.api.deps import AdminKey, EngineDep, Int4Id, ReadKey, SessionDep, SettingsDep
from app.api.errors import found, unprocessable
from app.db import write_session
from app.evaluators import store
from app.evaluators.agreement import AgreementOut, agreement
from app.evaluators.runner import contents_of, judge_policy, try_on_trace
from app.evaluators.spec import CheckConfig, EvaluatorCreate, EvaluatorPatch, JudgeConfig, config_of
from app.models.base import UTCTime, utcnow
from app.models.evaluators import Evaluation, Evaluator
from app.request_model import RequestModel
from app.response_model import ResponseModel, Time

router = APIRouter(prefix="/api/v1/evaluators", tags=["evaluators"])


def _get(session: Session, project_id: int, evaluator_id: int) -> Evaluator:
    ev = store.get(session, project_id=project_id, evaluator_id=evaluator_id)
    return found(ev, "evaluator", evaluator_id)


@router.get("")
def list_evaluators(principal: ReadKey, session: SessionDep) -> store.EvaluatorList:
    rows = store.list_all(session, project_id=principal.project_id)
    return store.EvaluatorList(evaluators=[store.out(session, ev) for ev in rows])


@router.post("", status_code=201)
def create_evaluator(
    body: EvaluatorCreate, principal: AdminKey, engine: EngineDep
) -> store.EvaluatorOut:
    with write_session(engine) as session:
        if store.name_taken(session, project_id=principal.project_id, name=body.name):
            raise HTTPException(409, f"name: an evaluator named {body.name!r} exists")
        ev = store.create(session, project_id=principal.project_id, body=body)
        return store.out(session, ev)


@router.get("/{evaluator_id}")
def get_evaluator(
    evaluator_id: Int4Id, principal: ReadKey, session: SessionDep
) -> store.EvaluatorOut:
    return store.out(session, _get(session, principal.project_id, evaluator_id))


@router.patch("/{evaluator_id}")
def patch_evaluator(
    evaluator_id: Int4Id, body: EvaluatorPatch, principal: AdminKey, engine: EngineDep
) -> store.EvaluatorOut:
    with unprocessable(ValueError), write_session(engine) as session:
        ev = store.update(session, _get(session, principal.project_id, evaluator_id), body)
        return store.out(session, ev)


@router.delete("/{evaluator_id}", status_code=204)
def delete_evaluator(evaluator_id: Int4Id, principal: AdminKey, engine: EngineDep) -> Response:
    with write_session(engine) as session:
        session.delete(_get(session, principal.project_id, evaluator_id))
    return Response(status_code=204)


class TryRequest(RequestModel):
    model_config = ConfigDict(extra="forbid")

    trace_id: str = Field(min_length=1, max_length=64)
    # An unsaved config to try (else the saved evaluator's).
    judge: JudgeConfig | None = None
    check: CheckConfig | None = None
    api_key: str | None = Field(None, max_length=1000)


class TryAnswer(ResponseModel):
    trace_id: str
    messages: list[dict[str, str]] = Field(description="exactly what the judge was sent")
    value: float | None
    label: str | None
    reason: str | None
    error: str | None
    tokens: int
    latency_ms: float | None


@router.post("/{evaluator_id}/try")
def try_evaluator(
    evaluator_id: Int4Id, body: TryRequest, principal: AdminKey, session: SessionDep,
    settings: SettingsDep,
) -> TryAnswer:  # fmt: skip
    """Evaluate one trace now and show the prompt and the answer; nothing is stored."""
    ev = _get(session, principal.project_id, evaluator_id)
    config: JudgeConfig | CheckConfig = body.judge or body.check or config_of(ev.kind, ev.config)
    contents = contents_of(session, ev, [body.trace_id])
    content = found(contents.get(body.trace_id), "trace", body.trace_id)
    kind = "check" if isinstance(config, CheckConfig) else "llm_judge"
    got = try_on_trace(content, kind, config, api_key=body.api_key or ev.api_key,
                       timeout=ev.timeout_seconds, policy=judge_policy(settings))  # fmt: skip
    return TryAnswer(trace_id=body.trace_id, **got.__dict__)


class BackfillRequest(RequestModel):
    model_config = ConfigDict(extra="forbid")

    start: UTCTime
    end: UTCTime
    confirm: bool = Field(False, description="false: only the estimate")


@router.post("/{evaluator_id}/backfill")
def backfill(
    evaluator_id: Int4Id, body: BackfillRequest, principal: AdminKey, engine: EngineDep
) -> store.BackfillOut:
    """Evaluate the traces that started in ``[start, end)`` with the current version: the
    call and token estimate first (``confirm: false``), queued with ``confirm: true``."""
    if body.end <= body.start:
        raise HTTPException(422, "end: must be after start")
    with unprocessable(ValueError), write_session(engine) as session:
        ev = _get(session, principal.project_id, evaluator_id)
        return store.backfill(session, ev, start=body.start, end=body.end, confirm=body.confirm)


class EvaluationOut(ResponseModel):
    trace_id: str
    version: int
    status: str
    value: float | None
    label: str | None
    reason: str | None
    error: str | None
    tokens: int
    latency_ms: float | None
    attempts: int
    backfill: bool
    finished_at: Time | None


class EvaluationPage(ResponseModel):
    evaluations: list[EvaluationOut]


@router.get("/{evaluator_id}/evaluations")
def list_evaluations(
    evaluator_id: Int4Id, principal: ReadKey, session: SessionDep,
    status: str | None = Query(None, max_length=16), trace_id: str | None = Query(None, max_length=64),
    limit: int = Query(100, ge=1, le=1000),
) -> EvaluationPage:  # fmt: skip
    """The newest evaluations of every version, filtered by status or trace."""
    ev = _get(session, principal.project_id, evaluator_id)
    q = select(Evaluation).where(Evaluation.evaluator_id == ev.id)
    if status:
        q = q.where(Evaluation.status == status)
    if trace_id:
        q = q.where(Evaluation.trace_id == trace_id)
    rows = session.scalars(q.order_by(Evaluation.id.desc()).limit(limit))
    out: list[dict[str, Any]] = [
        {f: getattr(r, f) for f in EvaluationOut.model_fields} for r in rows
    ]
    return EvaluationPage(evaluations=[EvaluationOut(**o) for o in out])


@router.get("/{evaluator_id}/agreement")
def get_agreement(
    evaluator_id: Int4Id, principal: ReadKey, session: SessionDep,
    days: float = Query(7.0, gt=0, le=90, description="how far back, in days"),
) -> AgreementOut:  # fmt: skip
    """The judge's agreement with the labels of its objective, per version, over the traces
    judged in the last ``days`` that carry a label."""
    ev = _get(session, principal.project_id, evaluator_id)
    return agreement(session, ev, now=utcnow(), days=days)
