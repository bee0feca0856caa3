"""One issue in full: events per hour, the versions it hits, example traces, its share of
its agent's traffic and its history (the API's ``GET /api/v1/issues/{id}`` and the page).

Counts per hour are grouped in SQL over ``ix_failure_events_issue_at`` for the last
:data:`CHART_HOURS`, so an issue with a million events costs its hours, not its rows.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Integer, cast, func, literal_column, select
from sqlalchemy.orm import Session

from app.issues.schemas import (
    ExampleTrace,
    HourCount,
    IssueDetail,
    LinkedAlert,
    StateChangeOut,
    UserCount,
    VersionCount,
)
from app.issues.store import RECENT, alerts_of_issue, history, issue_out, recent_counts
from app.models import FailureEvent, FailureIssue, Trace

CHART_HOURS = 72
EXAMPLES = 10
TOP_USERS = 5


def _hour(column: Any, dialect: str) -> Any:
    """The epoch second of the hour holding ``column``, on either database (the width as
    SQL text: GROUP BY must repeat the SELECT's expression, as app/web/evaluator_view.py)."""
    width = literal_column("3600", Integer)
    if dialect == "postgresql":
        return cast(func.floor(func.extract("epoch", column) / width), Integer) * width
    return (cast(func.strftime("%s", column), Integer) // width) * width


def issue_detail(session: Session, issue: FailureIssue, *, now: datetime) -> IssueDetail:
    mine = FailureEvent.issue_id == issue.id
    hour = _hour(FailureEvent.at, session.get_bind().dialect.name)
    since = now - timedelta(hours=CHART_HOURS)
    hours = [
        HourCount(hour=datetime.fromtimestamp(int(h), tz=UTC), events=int(e), traces=int(t))
        for h, e, t in session.execute(
            select(hour, func.count(), func.count(FailureEvent.trace_id.distinct()))
            .where(mine, FailureEvent.at >= since).group_by(hour).order_by(hour)
        )
    ]  # fmt: skip
    versions = [
        VersionCount(version=v, events=int(e), traces=int(t), first_seen=f)
        for v, e, t, f in session.execute(
            select(FailureEvent.agent_version, func.count(),
                   func.count(FailureEvent.trace_id.distinct()), func.min(FailureEvent.at))
            .where(mine).group_by(FailureEvent.agent_version)
            .order_by(func.count().desc(), FailureEvent.agent_version)
        )
    ]  # fmt: skip
    examples = [
        ExampleTrace(trace_id=t, at=a, version=v, message=m)
        for t, a, v, m in session.execute(
            select(FailureEvent.trace_id, FailureEvent.at, FailureEvent.agent_version,
                   FailureEvent.message)
            .where(mine).order_by(FailureEvent.at.desc(), FailureEvent.id.desc()).limit(EXAMPLES)
        )
    ]  # fmt: skip
    recent = recent_counts(session, [issue.id], now - RECENT).get(issue.id, (0, 0, 0))
    traffic = session.scalar(
        select(func.count()).select_from(Trace).where(
            Trace.project_id == issue.project_id, Trace.agent == issue.agent,
            Trace.started_at >= now - RECENT,
        )
    )  # fmt: skip
    return IssueDetail(
        **issue_out(issue, now, recent).model_dump(),
        hours=hours, versions=versions, examples=examples,
        share_24h=recent[1] / traffic if traffic else None,
        **_people(session, issue),
        history=[StateChangeOut.model_validate(c) for c in history(session, issue_id=issue.id)],
        alerts=[LinkedAlert.model_validate(a) for a in
                alerts_of_issue(session, project_id=issue.project_id, issue_id=issue.id)],
    )  # fmt: skip


def _people(session: Session, issue: FailureIssue) -> dict[str, Any]:
    """The users and sessions its stored events' traces served (joined on the trace)."""
    hit = (
        select(Trace.trace_id, Trace.user_id, Trace.session_id)
        .where(Trace.project_id == issue.project_id, Trace.trace_id.in_(
            select(FailureEvent.trace_id).where(FailureEvent.issue_id == issue.id)))
        .subquery()
    )  # fmt: skip
    users, sessions = session.execute(
        select(func.count(hit.c.user_id.distinct()), func.count(hit.c.session_id.distinct()))
    ).one()
    top = session.execute(
        select(hit.c.user_id, func.count()).where(hit.c.user_id.is_not(None))
        .group_by(hit.c.user_id).order_by(func.count().desc(), hit.c.user_id).limit(TOP_USERS)
    ).all()  # fmt: skip
    return {"users": int(users), "sessions": int(sessions),
            "top_users": [UserCount(user_id=u, traces=int(n)) for u, n in top]}  # fmt: skip
