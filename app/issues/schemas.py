"""What the issues API answers: one response model per shape (the list, one issue)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict


class IssueOut(BaseModel):
    """An issue as listed: what fails, where, how often, since when, and its state."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    title: str
    agent: str
    span_kind: str
    tool: str
    error_type: str
    state: str  # new, ongoing, regressed, resolved, ignored, muted (app/issues/states.py)
    status: str  # what a person set: open, resolved, ignored, muted
    status_note: str | None
    first_seen: datetime
    last_seen: datetime
    event_count: int
    trace_count: int
    events_24h: int  # recent impact, the list's order
    traces_24h: int
    events_prev_24h: int  # the 24 h before: its trend


class IssuePage(BaseModel):
    issues: list[IssueOut]


class HourCount(BaseModel):
    hour: datetime
    events: int
    traces: int


class VersionCount(BaseModel):
    version: str
    events: int
    traces: int
    first_seen: datetime


class ExampleTrace(BaseModel):
    trace_id: str
    at: datetime
    version: str
    message: str


class StateChangeOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    at: datetime
    actor: str
    from_state: str
    to_state: str
    note: str | None


class UserCount(BaseModel):
    user_id: str
    traces: int


class LinkedAlert(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    state: str
    severity: str
    first_fired_at: datetime
    summary: str


class IssueDetail(IssueOut):
    """One issue: events per hour, the versions it hits, example traces (newest first),
    its share of its agent's traces in the last 24 h, and its state history."""

    hours: list[HourCount]
    versions: list[VersionCount]
    examples: list[ExampleTrace]
    share_24h: float | None  # traces with it / the agent's traces, last 24 h; None: no traffic
    users: int  # distinct users of the traces it hit (user.id), of its stored events
    sessions: int  # distinct sessions (session.id / gen_ai.conversation.id)
    top_users: list[UserCount]
    history: list[StateChangeOut]
    alerts: list[LinkedAlert]  # the ISSUES alerts raised for it, newest first
