"""Scores from the ecosystem: ``POST /api/v1/scores`` (feedback, delayed ground truth) and
the project's score roles, ``GET``/``PUT /api/v1/project/score-roles``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from app.api.body import read_batch
from app.api.deps import AdminKey, EngineDep, IngestKey, SessionDep, SettingsDep
from app.db import write_session
from app.ingest.schemas import json_body
from app.ingest.service import ingest_batch
from app.scores import roles as score_roles
from app.scores import store
from app.scores.feedback import validate_scores
from app.scores.schemas import ScoreRolesBody, ScoreRolesOut, ScoresAnswer, ScoresBatch

router = APIRouter(prefix="/api/v1", tags=["scores"])


@router.post("/scores", openapi_extra=json_body(ScoresBatch))
async def post_scores(
    request: Request, principal: IngestKey, settings: SettingsDep
) -> ScoresAnswer:
    """``{"scores": [...]}``; 200 with per-item rejections (``scores[i].field``)."""
    items = await read_batch(request, settings, field="scores", route="/api/v1/scores")
    valid, rejected = validate_scores(items)
    answer = await ingest_batch(
        app_state=request.app.state,
        project_id=principal.project_id,
        valid=valid,
        rejected=rejected,
        total=len(items),
    )
    rejected_at = {r.index for r in answer.rejected}

    def pending() -> int:
        with request.app.state.sessionmaker() as session:
            known = store.stored_trace_ids(
                session,
                project_id=principal.project_id,
                trace_ids=(ev.row["trace_id"] for ev in valid),
            )
        return sum(
            1 for ev in valid if ev.index not in rejected_at and ev.row["trace_id"] not in known
        )

    return ScoresAnswer(**answer.model_dump(), pending_traces=await run_in_threadpool(pending))


@router.get("/project/score-roles")
def get_score_roles(principal: AdminKey, session: SessionDep) -> ScoreRolesOut:
    found = score_roles.get_roles(session, project_id=principal.project_id)
    return ScoreRolesOut(roles=found.as_dict, label_sources=list(found.label_sources))


@router.put("/project/score-roles")
def put_score_roles(body: ScoreRolesBody, principal: AdminKey, engine: EngineDep) -> ScoreRolesOut:
    """Replace the roles; the next monitor run reads every stored score with them."""
    wanted = score_roles.ScoreRoles.from_mapping(body.roles, body.label_sources)
    with write_session(engine) as session:
        saved = score_roles.put_roles(session, project_id=principal.project_id, roles=wanted)
    return ScoreRolesOut(roles=saved.as_dict, label_sources=list(saved.label_sources))
