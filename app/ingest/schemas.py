"""The native ingest API as OpenAPI describes it, and its answer.

The event models document the body only: events are checked by the hand-written field
checkers of :mod:`app.ingest.events` (tens of thousands of spans a second), which also keep a
malformed event from failing its batch and name its field as ``events[i].body.field``.
``tests/app/test_openapi.py`` checks that these literals match the checkers' choices.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.response_model import ResponseModel

EventTime = Annotated[
    str | float,
    Field(description="ISO-8601 (with Z or an offset; naive is UTC) or epoch seconds"),
]
Id64 = Annotated[str, Field(max_length=64)]
Name = Annotated[str, Field(max_length=128)]
Attributes = Annotated[
    dict[str, Any],
    Field(description="free-form JSON; size and nesting depth are limited (docs: Input limits)"),
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow")


class TraceBody(_Body):
    trace_id: Id64
    agent: Name = ""
    agent_version: Id64 = ""
    started_at: EventTime | None = None
    ended_at: EventTime | None = None
    status: Literal["ok", "error"] = "ok"
    input_hash: Name | None = None
    entry_point: Name | None = None
    source: Literal["production", "eval", "shadow"] = "production"
    counterfactual_of: Id64 | None = None
    session_id: Name | None = Field(
        None,
        description="the conversation it is a turn of; else read from attributes "
        "(session.id, gen_ai.conversation.id, ...: docs, Sessions and users)",
    )
    user_id: Name | None = Field(
        None, description="the end user it served; else read from attributes (user.id, ...)"
    )
    attributes: Attributes = {}


class SpanBody(_Body):
    trace_id: Id64
    span_id: Id64
    parent_span_id: Id64 | None = None
    kind: Literal[
        "agent", "llm", "tool", "retrieval", "plan", "step", "chain", "embedding", "evaluator"
    ] = "step"
    name: Annotated[str, Field(max_length=256)] = ""
    tool_name: Name | None = None
    status: Literal["ok", "error", "unset"] = Field("ok", description="unset is stored as ok")
    error_type: Name | None = None
    started_at: EventTime | None = None
    ended_at: EventTime | None = None
    step_index: Annotated[int, Field(ge=0, le=2**31 - 1)] | None = None
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    attributes: Attributes = {}


class ScoreBody(_Body):
    trace_id: Id64
    name: Name
    value: float
    kind: Literal["proxy", "true", "guardrail"] = "proxy"
    source: Literal["online", "delayed", "human", "eval"] = "online"
    created_at: EventTime | None = None


class EmbeddingBody(_Body):
    """One vector: ``vector`` (numbers) or ``vector_b64`` (little-endian ``dtype``)."""

    stream: Name
    model: Name = ""
    vector: list[float] | None = Field(None, min_length=1)
    vector_b64: str | None = None
    dtype: Literal["float32", "float16"] = "float32"
    trace_id: Id64 | None = None
    sample_id: Name | None = None
    created_at: EventTime | None = None


EventId = Annotated[
    str | int, Field(description="client id, unique per project: a re-sent id is a duplicate")
]


class TraceEvent(BaseModel):
    id: EventId
    type: Literal["trace"]
    body: TraceBody


class SpanEvent(BaseModel):
    id: EventId
    type: Literal["span"]
    body: SpanBody


class ScoreEvent(BaseModel):
    id: EventId
    type: Literal["score"]
    body: ScoreBody


class EmbeddingEvent(BaseModel):
    id: EventId
    type: Literal["embedding"]
    body: EmbeddingBody


Event = Annotated[TraceEvent | SpanEvent | ScoreEvent | EmbeddingEvent, Field(discriminator="type")]


class IngestBatch(BaseModel):
    """Events of any types; each is accepted or rejected on its own."""

    events: list[Event] = Field(description="at most TELLTALE_MAX_EVENTS_PER_BATCH")


class EmbeddingsBatch(BaseModel):
    """Vectors for one stream: ``vectors`` or ``vectors_b64`` with ``dim`` and ``dtype``."""

    stream: Name
    model: Name = ""
    vectors: list[list[float]] | None = None
    vectors_b64: str | None = Field(None, description="row-major, little-endian dtype")
    dim: int | None = Field(None, gt=0)
    dtype: Literal["float32", "float16"] = "float32"
    sample_ids: list[str | int] | None = None
    ids: list[str | int] | None = Field(None, description="default: <stream>:<sample_id>")
    trace_ids: list[str | None] | None = None


class RejectionOut(ResponseModel):
    index: int
    id: str | None
    error: str = Field(description="names the field, e.g. events[3].body.trace_id")


class IngestAnswer(ResponseModel):
    accepted: int
    duplicates: int
    rejected: list[RejectionOut]


def json_body(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` declaring ``model`` as the JSON request body, its $defs inlined
    (the schema sits outside ``components``, so no ``$ref`` could point into it)."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return inline(defs[ref.removeprefix("#/$defs/")])
            # A discriminator's mapping names $defs too; the schemas it picks are inlined.
            return {k: inline(v) for k, v in node.items() if k != "discriminator"}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    content = {"application/json": {"schema": inline(schema)}}
    return {"requestBody": {"required": True, "content": content}}
