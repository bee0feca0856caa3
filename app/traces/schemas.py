"""Answers of the trace routes."""

from __future__ import annotations

from typing import Any

from pydantic import Field, RootModel

from app.response_model import ResponseModel, Time


class TraceOut(ResponseModel):
    trace_id: str
    agent: str
    agent_version: str
    started_at: Time | None
    ended_at: Time | None
    status: str
    input_hash: str | None
    entry_point: str | None
    source: str
    counterfactual_of: str | None
    # The conversation it is a turn of and its end user (docs: Sessions and users).
    session_id: str | None = None
    user_id: str | None = None
    attributes: dict[str, Any]
    # Why its fields could not be derived (app/derive/failures.py); None when they were.
    derive_error: str | None = None
    # Its tool loop (app/derive/loops.py): the tool, when its longest run of identical
    # calls is a loop, and that run's calls; None: not derived.
    loop_tool: str | None = None
    loop_calls: int | None = None


class TracePage(ResponseModel):
    traces: list[TraceOut]
    next_cursor: str | None


class SpanOut(ResponseModel):
    span_id: str
    parent_span_id: str | None
    kind: str
    name: str
    tool_name: str | None
    status: str
    error_type: str | None
    started_at: Time | None
    ended_at: Time | None
    step_index: int | None
    confidence: float | None
    request_model: str | None
    response_model: str | None
    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None
    cost: float | None
    cost_source: str | None = Field(
        None,
        description="`table <version>` or `project <time>`: the cost Telltale computed and the "
        "price it used; `no price`, `no tokens`, `no model`: why an LLM call has none; null: "
        "the cost as sent (or not priced yet)",
    )
    latency_ms: float | None
    attributes: dict[str, Any]


class ScoreOut(ResponseModel):
    name: str
    value: float
    kind: str
    source: str
    created_at: Time
    label: str | None
    explanation: str | None


class TraceSteps(ResponseModel):
    """Spans and scores of a trace whose trace row has not arrived (yet)."""

    trace_id: str
    spans: list[SpanOut]
    scores: list[ScoreOut]


class TraceDetail(TraceOut):
    spans: list[SpanOut]
    scores: list[ScoreOut]


class SpanEventOut(ResponseModel):
    """A GenAI event (an OTLP log record: prompt, choice, evaluation...) of one span."""

    name: str
    time: Time | None
    attributes: dict[str, Any]
    body: Any = None


class SpanEventsOut(RootModel[dict[str, list[SpanEventOut]]]):
    """A trace's GenAI events by span: ``{span_id: [event, ...]}``, each in time order."""
