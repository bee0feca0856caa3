"""Reading issues back and changing their state: the API's and the pages' one store.

The list's order is recent impact: events in the last 24 h, then the latest seen. The
state is read at read time (:func:`app.issues.states.issue_state`), so filtering by state
happens after the query; a project has issues by the hundred, not by the million (each
is a distinct way of failing), so that costs a scan of its issues, not of its events.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.issues.schemas import IssueOut
from app.issues.states import PERSON_STATES, issue_state
from app.models import Alert, FailureEvent, FailureIssue, IssueStateChange

RECENT = timedelta(hours=24)
DEFAULT_HIDDEN = ("ignored",)  # off the list unless asked for by state


class StateRefused(ValueError):
    """A state change the domain refuses (the message names the field)."""


def state_of(issue: FailureIssue, now: datetime) -> str:
    return issue_state(
        status=issue.status, first_seen=issue.first_seen, last_seen=issue.last_seen,
        regressed_at=issue.regressed_at, status_at=issue.status_at, now=now,
    )  # fmt: skip


Recent = tuple[int, int, int]  # events and traces since, events in the period before


def recent_counts(session: Session, issue_ids: list[int], since: datetime) -> dict[int, Recent]:
    """Per issue, (events, distinct traces) since ``since`` and the events of the
    :data:`RECENT` before it, its trend (``ix_failure_events_issue_at``)."""
    if not issue_ids:
        return {}
    now_part = FailureEvent.at >= since
    rows = session.execute(
        select(FailureEvent.issue_id, func.count().filter(now_part),
               func.count(FailureEvent.trace_id.distinct()).filter(now_part),
               func.count().filter(~now_part))
        .where(FailureEvent.issue_id.in_(issue_ids), FailureEvent.at >= since - RECENT)
        .group_by(FailureEvent.issue_id)
    ).all()  # fmt: skip
    return {int(i): (int(e), int(t), int(b)) for i, e, t, b in rows}


def issue_out(issue: FailureIssue, now: datetime, recent: Recent) -> IssueOut:
    return IssueOut.model_validate({
        **{c: getattr(issue, c) for c in IssueOut.model_fields if hasattr(issue, c)},
        "state": state_of(issue, now), "events_24h": recent[0], "traces_24h": recent[1],
        "events_prev_24h": recent[2],
    })  # fmt: skip


def list_issues(
    session: Session,
    *,
    project_id: int,
    now: datetime,
    agent: str | None = None,
    version: str | None = None,
    tool: str | None = None,
    state: str | None = None,
    limit: int = 100,
) -> list[IssueOut]:
    """The project's issues by recent impact, narrowed by each filter given; without a
    ``state``, ignored issues are left out (as Sentry's default list does)."""
    query = select(FailureIssue).where(FailureIssue.project_id == project_id)
    if agent is not None:
        query = query.where(FailureIssue.agent == agent)
    if tool is not None:
        query = query.where(FailureIssue.tool == tool)
    if version is not None:
        hit = select(FailureEvent.issue_id).where(
            FailureEvent.project_id == project_id, FailureEvent.agent_version == version
        )
        query = query.where(FailureIssue.id.in_(hit))
    issues = list(session.scalars(query))
    wanted = [
        i for i in issues
        if (state_of(i, now) == state if state else state_of(i, now) not in DEFAULT_HIDDEN)
    ]  # fmt: skip
    recent = recent_counts(session, [i.id for i in wanted], now - RECENT)
    out = [issue_out(i, now, recent.get(i.id, (0, 0, 0))) for i in wanted]
    out.sort(key=lambda o: (-o.events_24h, -o.last_seen.timestamp(), o.id))
    return out[:limit]


def get_issue(session: Session, *, project_id: int, issue_id: int) -> FailureIssue | None:
    issue = session.get(FailureIssue, issue_id)
    return issue if issue is not None and issue.project_id == project_id else None


def change_state(
    session: Session, *, issue: FailureIssue, to: str, note: str | None, actor: str,
    now: datetime,
) -> IssueStateChange:  # fmt: skip
    """A person sets ``to`` (open, resolved, ignored, muted) with a note; recorded in the
    issue's history with the state it was read in before."""
    if to not in PERSON_STATES:
        raise StateRefused(f"state: must be one of {', '.join(PERSON_STATES)}, not {to!r}")
    before = state_of(issue, now)
    issue.status, issue.status_note, issue.status_at = to, note, now
    if to == "open":
        issue.regressed_at = None  # reopened by hand: no longer read as regressed
    change = IssueStateChange(
        project_id=issue.project_id, issue_id=issue.id, at=now, actor=actor,
        from_state=before, to_state=state_of(issue, now), note=note,
    )  # fmt: skip
    session.add(change)
    return change


def history(session: Session, *, issue_id: int) -> list[IssueStateChange]:
    return list(session.scalars(
        select(IssueStateChange).where(IssueStateChange.issue_id == issue_id)
        .order_by(IssueStateChange.at, IssueStateChange.id)
    ))  # fmt: skip


def issues_of_trace(session: Session, *, project_id: int, trace_id: str) -> list[dict[str, Any]]:
    """The issues one trace's failure events belong to (the trace page names them)."""
    rows = session.execute(
        select(FailureIssue.id, FailureIssue.title, FailureIssue.tool, func.count())
        .join(FailureEvent, FailureEvent.issue_id == FailureIssue.id)
        .where(FailureEvent.project_id == project_id, FailureEvent.trace_id == trace_id)
        .group_by(FailureIssue.id, FailureIssue.title, FailureIssue.tool)
        .order_by(FailureIssue.id)
    ).all()  # fmt: skip
    return [{"id": i, "title": t, "tool": tool, "events": n} for i, t, tool, n in rows]


def issues_among(
    session: Session, *, project_id: int, trace_ids: list[str], issue_ids: Sequence[int] = ()
) -> list[dict[str, Any]]:
    """The issues an alert page names: those of ``issue_ids`` (an ISSUES alert's label) and
    those its example traces belong to, with how many of them each holds."""
    hits: dict[int, int] = {}
    if trace_ids:
        rows = session.execute(
            select(FailureEvent.issue_id, func.count(FailureEvent.trace_id.distinct()))
            .where(FailureEvent.project_id == project_id, FailureEvent.trace_id.in_(trace_ids))
            .group_by(FailureEvent.issue_id)
        ).all()  # fmt: skip
        hits = {int(i): int(n) for i, n in rows}
    wanted = set(hits) | set(issue_ids)
    if not wanted:
        return []
    found = session.scalars(select(FailureIssue).where(
        FailureIssue.project_id == project_id, FailureIssue.id.in_(wanted)))  # fmt: skip
    out = [{"id": i.id, "title": i.title, "tool": i.tool, "examples": hits.get(i.id, 0)}
           for i in found]  # fmt: skip
    return sorted(out, key=lambda d: (d["id"] not in issue_ids, -d["examples"], d["id"]))


def alerts_of_issue(session: Session, *, project_id: int, issue_id: int) -> list[Alert]:
    """The ISSUES alerts raised for this issue (labelled ``issue``), newest first."""
    found = session.scalars(
        select(Alert).where(Alert.project_id == project_id, Alert.failure_mode == "ISSUES")
        .order_by(Alert.first_fired_at.desc(), Alert.id.desc())
    )  # fmt: skip
    return [a for a in found if (a.labels or {}).get("issue") == str(issue_id)]
