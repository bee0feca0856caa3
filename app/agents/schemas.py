"""What the agent pages and ``/api/v1/agents`` answer: one model per view.

Rates are fractions (0.05 is 5 %), latencies milliseconds, cost US dollars as the pricing
wing computes them (:mod:`app.pricing`); a measure without data is None, never 0.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel


class Success(BaseModel):
    """The share of an agent's scores of its main ``true`` objective that pass."""

    objective: str
    rate: float
    scores: int


class AgentRow(BaseModel):
    agent: str
    traces: int
    traces_per_hour: float
    failure_rate: float | None
    tool_calls: int | None  # None in the list (read per agent: see app.agents.summary)
    tool_error_rate: float | None
    p50_ms: float | None
    p95_ms: float | None
    tokens_per_trace: float | None
    cost_per_trace: float | None
    cost: float
    loop_rate: float | None
    success: Success | None
    open_alerts: int
    versions: int
    last_seen: datetime | None


class AgentList(BaseModel):
    range: str
    start: datetime
    end: datetime
    agents: list[AgentRow]
    project_alerts: int  # open alerts that name no agent


class SeriesPoint(BaseModel):
    """One chart step: ``at`` is its start."""

    at: datetime
    traces: int
    traces_per_hour: float
    failure_rate: float | None
    tool_error_rate: float | None
    success_rate: float | None
    p50_ms: float | None
    p95_ms: float | None
    tokens_per_trace: float | None
    cost_per_trace: float | None
    loop_rate: float | None


class DayTotals(BaseModel):
    day: datetime
    traces: int
    tokens: float
    cost: float


class VersionRow(BaseModel):
    version: str
    traces: int
    failure_rate: float | None
    first_seen: datetime | None
    last_seen: datetime | None


class AlertRef(BaseModel):
    id: int
    severity: str
    state: str
    summary: str
    since: datetime


class AgentDetail(BaseModel):
    range: str
    start: datetime
    end: datetime
    step_seconds: int
    summary: AgentRow
    model_calls: int
    unpriced_calls: int  # model calls with no cost, sent or computed (app.pricing.coverage)
    points: list[SeriesPoint]
    days: list[DayTotals]
    versions: list[VersionRow]
    alerts: list[AlertRef]


class MeasureOut(BaseModel):
    measure: str
    unit: str  # "rate" | "ms" | "tokens" | "usd"
    a: float | None
    b: float | None
    n_a: int
    n_b: int
    change: float | None
    relative_change: float | None
    statistic: float | None
    p_value: float | None
    p_holm: float | None
    test: str
    significant: bool


class ExampleTrace(BaseModel):
    trace_id: str
    started_at: datetime | None
    status: str
    latency_ms: float | None


class VersionComparison(BaseModel):
    agent: str
    range: str
    start: datetime
    end: datetime
    a: str
    b: str
    versions: list[VersionRow]
    measures: list[MeasureOut]
    alpha: float
    examples_a: list[ExampleTrace]
    examples_b: list[ExampleTrace]


class GraphNode(BaseModel):
    id: str
    kind: str  # "start" | "end" | "tool" | "llm" | "agent" | "step"
    name: str
    calls: int  # see counted
    counted: str  # "range": calls and errors over the whole range (rollups); "sample": in it
    errors: int
    error_rate: float | None
    sampled_calls: int
    position: float  # mean relative place in a trace (0 first, 1 last)
    examples: list[str]  # trace ids of the sample with this step, those where it failed first


class GraphEdge(BaseModel):
    source: str
    target: str
    count: int  # transitions in the sampled traces
    traces: int  # sampled traces with it


class AgentGraph(BaseModel):
    agent: str
    range: str
    start: datetime
    end: datetime
    traces_in_range: int
    sampled_traces: int
    sample: str  # how the sample was chosen, in words
    nodes: list[GraphNode]
    edges: list[GraphEdge]
