"""Alert rules: CRUD, run now, and the preview of an unsaved rule over the stored history.

A rule is a monitor of the ``RULE`` family (:mod:`app.rules`): its runs and their history
are the monitor routes' (``/api/v1/monitors/{id}/runs``), its alerts are every alert's.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Response
from sqlalchemy.orm import Session

from app.api.deps import AdminKey, EngineDep, Int4Id, MonitorRunnerDep, ReadKey, SessionDep
from app.api.errors import found, unprocessable
from app.db import write_session
from app.deps import ProjectComputeSlot
from app.models import Monitor
from app.models.base import utcnow
from app.monitors.detection import DetectorConfigError
from app.monitors.schemas import RunOut, RunRequest
from app.monitors.slots import DetectorsBusy
from app.rules import store
from app.rules.preview import preview
from app.rules.schemas import PreviewOut, PreviewRequest, RuleCreate, RuleList, RuleOut, RulePatch

router = APIRouter(prefix="/api/v1/rules", tags=["rules"])


def _get(session: Session, project_id: int, rule_id: int) -> Monitor:
    return found(store.get_rule(session, project_id=project_id, rule_id=rule_id), "rule", rule_id)


@router.get("")
def list_rules(principal: ReadKey, session: SessionDep) -> RuleList:
    rows = store.list_rules(session, project_id=principal.project_id)
    return RuleList(rules=[store.rule_out(m) for m in rows])


@router.post("", status_code=201)
def create_rule(body: RuleCreate, principal: AdminKey, engine: EngineDep) -> RuleOut:
    with unprocessable(DetectorConfigError), write_session(engine) as session:
        rule = store.create_rule(session, project_id=principal.project_id, body=body)
        return store.rule_out(rule)


@router.post("/preview", dependencies=[ProjectComputeSlot])
def preview_rule(body: PreviewRequest, principal: AdminKey, session: SessionDep) -> PreviewOut:
    """Replay an unsaved rule over the last ``days`` (at most 30): its series per group at
    each step, its levels, and the alert episodes it would have opened and resolved."""
    now = body.now or utcnow()
    return preview(session, project_id=principal.project_id, req=body, now=now)


@router.get("/{rule_id}")
def get_rule(rule_id: Int4Id, principal: ReadKey, session: SessionDep) -> RuleOut:
    return store.rule_out(_get(session, principal.project_id, rule_id))


@router.patch("/{rule_id}")
def patch_rule(rule_id: Int4Id, body: RulePatch, principal: AdminKey, engine: EngineDep) -> RuleOut:
    with unprocessable(DetectorConfigError), write_session(engine) as session:
        rule = store.update_rule(session, rule=_get(session, principal.project_id, rule_id),
                                 patch=body)  # fmt: skip
        return store.rule_out(rule)


@router.delete("/{rule_id}", status_code=204)
def delete_rule(rule_id: Int4Id, principal: AdminKey, engine: EngineDep) -> Response:
    with write_session(engine) as session:
        session.delete(_get(session, principal.project_id, rule_id))
    return Response(status_code=204)


@router.post("/{rule_id}/run", dependencies=[ProjectComputeSlot])
def run_rule(
    rule_id: Int4Id, principal: AdminKey, session: SessionDep, runner: MonitorRunnerDep,
    body: RunRequest | None = None,
) -> RunOut:  # fmt: skip
    """Evaluate the rule now (or as of ``now``) and return the persisted run."""
    _get(session, principal.project_id, rule_id)
    try:
        run = runner.run_now(rule_id, now=body.now if body else None)
    except DetectorsBusy as exc:
        raise HTTPException(429, str(exc), headers={"Retry-After": "5"}) from None
    return RunOut.model_validate(found(run, "rule", rule_id))
