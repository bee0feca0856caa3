"""The issues pages: the list a team works from in the morning (by recent impact, with
the API's filters) and one issue (its chart, versions, examples and history, and the
state buttons for annotate and admin). They read through :mod:`app.issues.store`, as
``/api/v1/issues`` does."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Form, HTTPException, Query
from fastapi.responses import RedirectResponse

from app.db import write_session
from app.deps import EngineDep, Int8Id, SessionDep, found
from app.issues import store
from app.issues.detail import CHART_HOURS, issue_detail
from app.issues.labeling import MAX_EXAMPLES, NoQueue, queue_examples
from app.issues.states import PERSON_STATES, STATES
from app.labeling.queues import list_queues
from app.models.base import utcnow
from app.web import issue_chart
from app.web.deps import WebDep

router = APIRouter(include_in_schema=False)


def _state(value: str | None) -> str | None:
    if not value:
        return None
    if value not in STATES:
        raise HTTPException(422, f"state: must be one of {', '.join(STATES)}, not {value!r}")
    return value


@router.get("/issues")
def issues_page(
    web: WebDep,
    session: SessionDep,
    agent: str | None = Query(None, max_length=128),
    version: str | None = Query(None, max_length=64),
    state: str | None = Query(None, max_length=16),
) -> Any:
    """Issues by recent impact; each filter narrows the list when given."""
    issues = store.list_issues(
        session, project_id=web.principal.project_id, now=utcnow(), agent=agent or None,
        version=version or None, state=_state(state),
    )  # fmt: skip
    filters = {"agent": agent or "", "version": version or "", "state": state or ""}
    return web.render("issues.html", issues=issues, filters=filters, states=STATES)


@router.get("/issues/{issue_id}")
def issue_page(
    issue_id: Int8Id,
    web: WebDep,
    session: SessionDep,
    queued: int | None = Query(None, ge=0, le=MAX_EXAMPLES),
    queue: str | None = Query(None, max_length=128),
) -> Any:
    """The issue; ``queued``/``queue``: what "Label examples" just did (a redirect's)."""
    now = utcnow()
    issue = store.get_issue(session, project_id=web.principal.project_id, issue_id=issue_id)
    detail = issue_detail(session, found(issue, "issue", issue_id), now=now)
    chart = issue_chart.svg(
        detail.hours, detail.versions, start=now - timedelta(hours=CHART_HOURS), end=now,
        label=f"Events per hour of issue {issue_id}, last {CHART_HOURS} hours",
    )  # fmt: skip
    actions = [s for s in PERSON_STATES if s != detail.status]
    queues = [q.name for q in list_queues(session, project_id=web.principal.project_id)]
    done = (
        None
        if queued is None or not queue
        else f"Queued {queued} new trace{'' if queued == 1 else 's'} in {queue}."
    )
    return web.render("issue.html", issue=detail, chart=chart, actions=actions, queues=queues,
                      flash=done)  # fmt: skip


@router.post("/issues/{issue_id}/state")
def issue_state_form(
    issue_id: Int8Id,
    web: WebDep,
    engine: EngineDep,
    csrf: str = Form(""),
    state: str = Form(..., max_length=16),
    note: str = Form("", max_length=1000),
) -> Any:
    """Resolve, ignore, mute or reopen from the issue page (annotate role, as the API)."""
    web.check_form(csrf, role="annotate")
    try:
        with write_session(engine) as session:
            issue = found(
                store.get_issue(session, project_id=web.principal.project_id, issue_id=issue_id),
                "issue", issue_id,
            )  # fmt: skip
            store.change_state(session, issue=issue, to=state, note=note.strip() or None,
                               actor=web.principal.actor, now=utcnow())  # fmt: skip
    except store.StateRefused as exc:
        raise HTTPException(422, str(exc)) from None
    return RedirectResponse(f"/issues/{issue_id}", status_code=303)


@router.post("/issues/{issue_id}/label-examples")
def label_examples_form(
    issue_id: Int8Id,
    web: WebDep,
    engine: EngineDep,
    csrf: str = Form(""),
    queue: str = Form(..., max_length=128),
) -> Any:
    """ "Label examples" from the issue page: its newest traces into a queue (annotate)."""
    web.check_form(csrf, role="annotate")
    try:
        with write_session(engine) as session:
            issue = found(
                store.get_issue(session, project_id=web.principal.project_id, issue_id=issue_id),
                "issue", issue_id,
            )  # fmt: skip
            added, _ = queue_examples(session, issue=issue, queue=queue, limit=20, now=utcnow())
    except NoQueue as exc:
        raise HTTPException(422, str(exc)) from None
    return RedirectResponse(
        f"/issues/{issue_id}?queued={added}&queue={quote(queue)}", status_code=303
    )
