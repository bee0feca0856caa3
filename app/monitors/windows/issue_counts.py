"""The ISSUES monitor's windows: per failure issue, the traces it hit in the window, and
its agent's traces there (detectors/issue_rates.py reads them as shares).

Counted in SQL over every trace of the window, not a sample: an issue is a rare event by
nature, and a sample would miss the first traces of a new one. Events by their time
(``ix_failure_events_issue_at``), traces by start (``ix_traces_project_agent``); an issue
a person ignored or muted is left out (it never alerts).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import FailureEvent, FailureIssue, Trace
from detectors.issue_rates import IssueCount

SILENCED = ("ignored", "muted")


def issue_counts(
    data: Session, *, project_id: int, start: datetime, end: datetime, agent: str | None = None
) -> list[IssueCount]:
    """Every issue with an event in ``[start, end)``, and every agent's traces there (an
    issue without events gives its agent's traffic through the others; an agent's traffic
    is also reported with no issue, as a row of ``issue`` 0 and ``hit`` 0)."""
    traffic_q = (
        select(Trace.agent, func.count())
        .where(Trace.project_id == project_id, Trace.started_at >= start, Trace.started_at < end)
        .group_by(Trace.agent)
    )
    if agent is not None:
        traffic_q = traffic_q.where(Trace.agent == agent)
    traffic = {str(a): int(n) for a, n in data.execute(traffic_q)}
    hit_q = (
        select(FailureIssue.id, FailureIssue.title, FailureIssue.tool, FailureIssue.agent,
               FailureIssue.error_type, func.count(FailureEvent.trace_id.distinct()))
        .join(FailureEvent, FailureEvent.issue_id == FailureIssue.id)
        .where(FailureIssue.project_id == project_id, FailureIssue.status.not_in(SILENCED),
               FailureEvent.at >= start, FailureEvent.at < end)
        .group_by(FailureIssue.id, FailureIssue.title, FailureIssue.tool, FailureIssue.agent,
                  FailureIssue.error_type)
    )  # fmt: skip
    if agent is not None:
        hit_q = hit_q.where(FailureIssue.agent == agent)
    out = [
        IssueCount(int(i), str(t), str(tool), str(a), str(e), hit=int(n),
                   traces=traffic.get(str(a), 0))
        for i, t, tool, a, e, n in data.execute(hit_q)
    ]  # fmt: skip
    out += [IssueCount(0, "", "", a, "", hit=0, traces=n) for a, n in sorted(traffic.items())]
    return out
