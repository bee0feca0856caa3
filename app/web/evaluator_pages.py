"""Online evaluators' pages: Settings · evaluators (admin: list, create, edit, pause, delete)
and an evaluator's own page (its score over time, errors, recent evaluations; a test on one
trace for admins).

The forms go through the API's own models and store (:class:`~app.evaluators.spec.
EvaluatorCreate`, :class:`~app.evaluators.spec.EvaluatorPatch`, :mod:`app.evaluators.store`),
so a bad value is a 422 page with the API's message above the form and each part beside the
input it names (:func:`app.web.evaluator_form.field_errors`), what was typed kept but the
API key, which is write-only: the form says whether one is set and a blank keeps it. The
test on a trace is :func:`app.evaluators.runner.try_on_trace` under the judge egress policy,
as ``POST /api/v1/evaluators/{id}/try``: it shows the exact messages sent and the answer,
and stores nothing.
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial
from typing import Any

from fastapi import APIRouter, Form, Request
from sqlalchemy.orm import Session

from app.db import write_session
from app.deps import EngineDep, Int4Id, SessionDep, found
from app.evaluators import store
from app.evaluators.agreement import agreement
from app.evaluators.runner import contents_of, judge_policy, try_on_trace
from app.evaluators.spec import CHECKS, EvaluatorCreate, EvaluatorPatch, config_of
from app.models.base import utcnow
from app.models.evaluators import Evaluator
from app.web import evaluator_view as view
from app.web.deps import WebContext, WebDep
from app.web.evaluator_form import (
    CHECK_WORDS,
    DEFAULT_FORM,
    SOURCES,
    VARIABLES,
    body_of,
    field_errors,
    form_of,
)  # fmt: skip
from app.web.form_values import FormError, parse_form
from app.web.settings_pages import act, require_admin, settings_page

router = APIRouter(include_in_schema=False)
SETTINGS = "/settings/evaluators"


def _render(web: WebContext, session: Session, **extra: Any) -> Any:
    now = utcnow()
    rows = [store.out(session, ev, now=now)
            for ev in store.list_all(session, project_id=web.principal.project_id)]  # fmt: skip
    extra.setdefault("form", dict(DEFAULT_FORM))
    return settings_page(
        web, session, "evaluators", evaluators=[(o, view.summary(o)) for o in rows],
        checks=[(c, CHECK_WORDS[c]) for c in CHECKS], variables=VARIABLES, sources=SOURCES,
        field_errors=field_errors(extra.get("error")), **extra,
    )  # fmt: skip


def _get(session: Session, web: WebContext, evaluator_id: int) -> Evaluator:
    ev = store.get(session, project_id=web.principal.project_id, evaluator_id=evaluator_id)
    return found(ev, "evaluator", evaluator_id)


@router.get(SETTINGS)
def evaluators_page(web: WebDep, session: SessionDep) -> Any:
    require_admin(web)
    return _render(web, session)


@router.get(SETTINGS + "/{evaluator_id}")
def edit_page(evaluator_id: Int4Id, web: WebDep, session: SessionDep) -> Any:
    require_admin(web)
    return _render(web, session, form=form_of(_get(session, web, evaluator_id)))


async def _typed(request: Request) -> dict[str, Any]:
    form = await request.form()
    typed: dict[str, Any] = {k: str(v) for k, v in form.items() if k != "sources"}
    typed["sources"] = [str(v) for v in form.getlist("sources")]
    return typed


@router.post(SETTINGS)
async def create(request: Request, web: WebDep, session: SessionDep, engine: EngineDep) -> Any:
    typed = await _typed(request)
    shown: dict[str, Any] = {}
    pid = web.principal.project_id

    def action() -> str:
        kind = str(typed.get("kind", ""))
        body = parse_form(EvaluatorCreate, body_of(typed, kind=kind, editing=False))
        with write_session(engine) as s:
            if store.name_taken(s, project_id=pid, name=body.name):
                raise FormError(f"name: an evaluator named {body.name!r} exists")
            made = store.create(s, project_id=pid, body=body)
            shown["form"] = form_of(made)
        if not made.enabled:
            return (f"Evaluator {made.name!r} saved, paused: test it on a trace on its page, "
                    "then resume it.")  # fmt: skip
        return (f"Evaluator {made.name!r} saved; it scores the traces that settle from now "
                "on (a backfill through the API evaluates earlier ones).")  # fmt: skip

    return act(web, session, "evaluators", str(typed.get("csrf", "")), action, typed, shown,
               renderer=_render)  # fmt: skip


@router.post(SETTINGS + "/{evaluator_id}")
async def save(
    evaluator_id: Int4Id, request: Request, web: WebDep, session: SessionDep, engine: EngineDep
) -> Any:
    typed = await _typed(request)
    ev = store.get(session, project_id=web.principal.project_id, evaluator_id=evaluator_id)
    if ev is not None:  # the fixed parts, as the form shows them again on a refusal
        typed.update(evaluator_id=ev.id, name=ev.name, kind=ev.kind, score_name=ev.score_name,
                     has_api_key=bool(ev.api_key))  # fmt: skip
    shown: dict[str, Any] = {}

    def action() -> str:
        with write_session(engine) as s:
            row = _get(s, web, evaluator_id)
            patch = parse_form(EvaluatorPatch, body_of(typed, kind=row.kind, editing=True))
            before = row.version
            try:
                store.update(s, row, patch)
            except ValueError as exc:
                raise FormError(str(exc)) from None
            shown["form"] = form_of(row)
            if row.version != before:
                return (f"Evaluator {row.name!r} saved as version {row.version}: what it "
                        "computes changed, so it scores the traces that settle from now on.")  # fmt: skip
            return f"Evaluator {row.name!r} saved."

    return act(web, session, "evaluators", str(typed.get("csrf", "")), action, typed, shown,
               renderer=_render)  # fmt: skip


@router.post(SETTINGS + "/{evaluator_id}/pause")
def pause(
    evaluator_id: Int4Id, web: WebDep, session: SessionDep, engine: EngineDep,
    csrf: str = Form(""), enabled: str = Form("false"),
) -> Any:  # fmt: skip
    def action() -> str:
        on = enabled == "true"
        with write_session(engine) as s:
            row = _get(s, web, evaluator_id)
            was_held = row.paused_until is not None and row.paused_until > utcnow()
            store.update(s, row, EvaluatorPatch.model_validate({"enabled": on}))
            if not on:
                return f"Evaluator {row.name!r} paused."
            lifted = "; the circuit breaker's pause is lifted" if was_held else ""
            return f"Evaluator {row.name!r} resumed{lifted}."

    return act(web, session, "evaluators", csrf, action, {}, renderer=_render)


@router.post(SETTINGS + "/{evaluator_id}/delete")
def delete(
    evaluator_id: Int4Id, web: WebDep, session: SessionDep, engine: EngineDep, csrf: str = Form("")
) -> Any:
    def action() -> str:
        with write_session(engine) as s:
            row = _get(s, web, evaluator_id)
            name = row.name
            s.delete(row)
        return f"Evaluator {name!r} deleted; the scores it wrote are kept."

    return act(web, session, "evaluators", csrf, action, {}, renderer=_render)


# ---- an evaluator's page ----------------------------------------------------------------


def _page(web: WebContext, session: Session, *, evaluator_id: int, status: int = 200,
          **extra: Any) -> Any:  # fmt: skip
    ev = _get(session, web, evaluator_id)
    now = utcnow()
    o = store.out(session, ev, now=now)
    return web.render(
        "evaluator.html", status_code=status, ev=o, words=view.summary(o),
        chart=view.score_chart(session, ev, now=now),
        agreement=agreement(session, ev, now=now),
        errors=view.latest(session, ev, status="error", limit=10),
        recent=view.latest(session, ev, limit=50), form=extra.pop("form", None) or {},
        field_errors=field_errors(extra.get("error")), check_words=CHECK_WORDS, **extra,
    )  # fmt: skip


@router.get("/evaluators/{evaluator_id}")
def evaluator_page(evaluator_id: Int4Id, web: WebDep, session: SessionDep) -> Any:
    return _page(web, session, evaluator_id=evaluator_id)


@router.post("/evaluators/{evaluator_id}/try")
def try_page(
    evaluator_id: Int4Id, web: WebDep, session: SessionDep, csrf: str = Form(""),
    trace_id: str = Form("", max_length=64),
) -> Any:  # fmt: skip
    """Evaluate one trace with the saved evaluator and show what was sent and answered."""
    shown: dict[str, Any] = {"form": {"trace_id": trace_id}}

    def action() -> str:
        ev = _get(session, web, evaluator_id)
        tid = trace_id.strip()
        if not tid:
            raise FormError("trace_id: type the id of a trace of this project")
        content = contents_of(session, ev, [tid]).get(tid)
        if content is None:
            raise FormError(f"trace_id: no trace {tid!r} in this project")
        settings = web.request.app.state.settings
        got = try_on_trace(content, ev.kind, config_of(ev.kind, ev.config), api_key=ev.api_key,
                           timeout=ev.timeout_seconds, policy=judge_policy(settings))  # fmt: skip
        shown["tried"] = got
        shown["tried_trace"] = tid
        return f"Evaluated trace {tid} once; nothing was stored."

    return act(web, session, "", csrf, action, {"trace_id": trace_id}, shown,
               renderer=partial(_page, evaluator_id=evaluator_id))  # fmt: skip


@router.post("/evaluators/{evaluator_id}/backfill")
def backfill_page(
    evaluator_id: Int4Id, web: WebDep, session: SessionDep, engine: EngineDep,
    csrf: str = Form(""), hours: int = Form(24, ge=1, le=720), confirm: str = Form("0"),
) -> Any:  # fmt: skip
    """The estimate of backfilling the last ``hours``; queued only when confirmed (the
    API's ``POST /api/v1/evaluators/{id}/backfill``, estimate first)."""
    shown: dict[str, Any] = {"backfill_hours": hours}

    def action() -> str:
        end = utcnow()
        with write_session(engine) as s:
            row = _get(s, web, evaluator_id)
            try:
                got = store.backfill(s, row, start=end - timedelta(hours=hours), end=end,
                                     confirm=confirm == "1")  # fmt: skip
            except ValueError as exc:
                raise FormError(str(exc)) from None
        shown["estimate"] = got
        if got.queued:
            return f"Backfill queued: {got.traces:,} traces of the last {hours} h."
        return f"Estimate for the last {hours} h: {got.traces:,} traces; nothing queued yet."

    return act(web, session, "", csrf, action, {"hours": hours}, shown,
               renderer=partial(_page, evaluator_id=evaluator_id))  # fmt: skip
