"""Failure issues: the list by recent impact, one issue in full, and a person's state
change (annotate or admin keys), recorded in the issue's history."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from app.api.deps import AnnotateKey, EngineDep, Int8Id, ReadKey, SessionDep
from app.api.errors import found, unprocessable
from app.db import write_session
from app.issues import store
from app.issues.detail import issue_detail
from app.issues.labeling import MAX_EXAMPLES, NoQueue, queue_examples
from app.issues.schemas import IssueDetail, IssueOut, IssuePage
from app.models.base import utcnow

router = APIRouter(prefix="/api/v1/issues", tags=["issues"])

# The states read (app/issues/states.py STATES; tests/app/issues/test_api.py holds them equal).
State = Literal["new", "ongoing", "regressed", "resolved", "ignored", "muted"]


class IssueFilters(BaseModel):
    """The issue list's query parameters, each narrowing the list when given."""

    agent: str | None = Field(None, max_length=128)
    version: str | None = Field(None, max_length=64, description="an agent version it hit")
    tool: str | None = Field(None, max_length=128)
    state: State | None = Field(None, description="without it, ignored issues are left out")
    limit: int = Field(100, ge=1, le=500)


class StateChange(BaseModel):
    """What a person sets: ``open`` (reopen), ``resolved``, ``ignored`` or ``muted``."""

    state: Literal["open", "resolved", "ignored", "muted"]
    note: str | None = Field(None, max_length=1000)


class LabelExamples(BaseModel):
    """Which labeling queue gets the issue's newest traces, and how many at most."""

    queue: str = Field(..., min_length=1, max_length=128)
    limit: int = Field(20, ge=1, le=MAX_EXAMPLES)


class QueuedExamples(BaseModel):
    queue: str
    added: int
    already_queued: int


@router.get("")
def list_issues(
    principal: ReadKey, session: SessionDep, filters: Annotated[IssueFilters, Query()]
) -> IssuePage:
    """Issues by recent impact (events in the last 24 h, then the latest seen)."""
    issues = store.list_issues(
        session, project_id=principal.project_id, now=utcnow(), **filters.model_dump()
    )
    return IssuePage(issues=issues)


@router.get("/{issue_id}")
def get_issue(issue_id: Int8Id, principal: ReadKey, session: SessionDep) -> IssueDetail:
    """The issue with its events per hour, versions, example traces and state history."""
    issue = store.get_issue(session, project_id=principal.project_id, issue_id=issue_id)
    return issue_detail(session, found(issue, "issue", issue_id), now=utcnow())


@router.post("/{issue_id}/state")
def change_state(
    issue_id: Int8Id, body: StateChange, principal: AnnotateKey, engine: EngineDep
) -> IssueOut:
    """Resolve, ignore, mute or reopen the issue with a note; kept in its history."""
    now = utcnow()
    with unprocessable(store.StateRefused), write_session(engine) as session:
        issue = found(
            store.get_issue(session, project_id=principal.project_id, issue_id=issue_id),
            "issue", issue_id,
        )  # fmt: skip
        store.change_state(session, issue=issue, to=body.state, note=body.note,
                           actor=principal.actor, now=now)  # fmt: skip
        recent = store.recent_counts(session, [issue.id], now - store.RECENT)
        return store.issue_out(issue, now, recent.get(issue.id, (0, 0, 0)))


@router.post("/{issue_id}/label-examples")
def label_examples(
    issue_id: Int8Id, body: LabelExamples, principal: AnnotateKey, engine: EngineDep
) -> QueuedExamples:
    """Send the issue's newest traces to a labeling queue (a trace queued already is not
    added again)."""
    with unprocessable(NoQueue), write_session(engine) as session:
        issue = found(
            store.get_issue(session, project_id=principal.project_id, issue_id=issue_id),
            "issue", issue_id,
        )  # fmt: skip
        added, offered = queue_examples(session, issue=issue, queue=body.queue,
                                        limit=body.limit, now=utcnow())  # fmt: skip
    return QueuedExamples(queue=body.queue, added=added, already_queued=offered - added)
