"""Settings · Queues (admin): the labeling queues with their counts, a form to create one
(guidelines, label set, selector, budget) or edit it, and delete.

The form goes through the API's own models and store (:class:`~app.labeling.schemas.
QueueCreate`, :class:`~app.labeling.schemas.QueueUpdate`, :mod:`app.labeling.queues`), with
the request's session as the API's routes use it, so a bad value is a 422 page with the
API's message above the form and each part beside the input it names
(:func:`app.web.queue_form.field_errors`), what was typed kept.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Form, HTTPException, Request
from sqlalchemy.orm import Session

from app.deps import SessionDep
from app.labeling import queues
from app.labeling.errors import Conflict, NotFound
from app.labeling.schemas import QueueCreate, QueueUpdate
from app.models.base import utcnow
from app.web.deps import WebContext, WebDep
from app.web.form_values import FormError, parse_form
from app.web.queue_form import DEFAULT_FORM, SOURCES, body_of, field_errors, form_of
from app.web.settings_pages import act, require_admin, settings_page

router = APIRouter(include_in_schema=False)
SETTINGS = "/settings/queues"


def _render(web: WebContext, session: Session, **extra: Any) -> Any:
    found = queues.list_queues(session, project_id=web.principal.project_id)
    counts = queues.progress(
        session, queue_ids=[q.id for q in found], key_id=web.principal.key_id, now=utcnow()
    )
    extra.setdefault("form", dict(DEFAULT_FORM))
    return settings_page(
        web, session, "queues", queues=[(q, counts[q.id]) for q in found], sources=SOURCES,
        field_errors=field_errors(extra.get("error")), **extra,
    )  # fmt: skip


@router.get(SETTINGS)
def queues_page(web: WebDep, session: SessionDep) -> Any:
    require_admin(web)
    return _render(web, session)


@router.get(SETTINGS + "/{name}")
def edit_page(name: str, web: WebDep, session: SessionDep) -> Any:
    require_admin(web)
    try:
        queue = queues.get_queue(session, project_id=web.principal.project_id, name=name)
    except NotFound:
        raise HTTPException(404, f"queue {name!r} not found in this project") from None
    return _render(web, session, form=form_of(queue))


async def _typed(request: Request) -> dict[str, Any]:
    form = await request.form()
    typed: dict[str, Any] = {k: str(v) for k, v in form.items() if k != "sources"}
    typed["sources"] = [str(v) for v in form.getlist("sources")]
    return typed


@router.post(SETTINGS)
async def create(request: Request, web: WebDep, session: SessionDep) -> Any:
    typed = await _typed(request)
    shown: dict[str, Any] = {}

    def action() -> str:
        body = parse_form(QueueCreate, body_of(typed, editing=False))
        try:
            made = queues.create_queue(session, project_id=web.principal.project_id, body=body)
        except Conflict as exc:
            raise FormError(str(exc.detail)) from None
        shown["form"] = form_of(made)
        return (f"Queue {made.name!r} saved; it fills every {made.fill_interval_seconds} s with "
                f"up to {made.budget_per_period} items (Fill now through the API).")  # fmt: skip

    return act(web, session, "queues", str(typed.get("csrf", "")), action, typed, shown,
               renderer=_render)  # fmt: skip


@router.post(SETTINGS + "/{name}")
async def save(name: str, request: Request, web: WebDep, session: SessionDep) -> Any:
    typed = {**await _typed(request), "queue": name, "name": name}
    shown: dict[str, Any] = {}

    def action() -> str:
        body = parse_form(QueueUpdate, body_of(typed, editing=True))
        pid = web.principal.project_id
        queue = queues.update_queue(session, project_id=pid, name=name, body=body)
        shown["form"] = form_of(queue)
        return f"Queue {queue.name!r} saved."

    return act(web, session, "queues", str(typed.get("csrf", "")), action, typed, shown,
               renderer=_render)  # fmt: skip


@router.post(SETTINGS + "/{name}/delete")
def delete(name: str, web: WebDep, session: SessionDep, csrf: str = Form("")) -> Any:
    def action() -> str:
        queues.delete_queue(session, project_id=web.principal.project_id, name=name)
        return f"Queue {name!r} deleted, with its items and labels (the scores they wrote stay)."

    return act(web, session, "queues", csrf, action, {}, renderer=_render)
