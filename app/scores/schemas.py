"""The feedback API and the score-roles resource as OpenAPI describes them.

``ScoresBatch`` documents the body only: items are checked by :mod:`app.scores.feedback`,
so a bad item is rejected alone and named as ``scores[i].field``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.ingest.schemas import EventTime, IngestAnswer
from app.request_model import RequestModel
from app.response_model import ResponseModel

Kind = Literal["proxy", "true", "guardrail"]
Source = Literal["online", "delayed", "human", "eval"]
ScoreName = Annotated[str, Field(min_length=1, max_length=128)]
# detectors.records.LABEL_SOURCES, typed for the schema (tests check they agree).
DEFAULT_LABEL_SOURCES: tuple[Source, ...] = ("delayed", "human")


class ScoreItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    trace_id: str | None = Field(None, max_length=64, description="the trace id as stored")
    otel_trace_id: str | None = Field(
        None, pattern="^[0-9a-fA-F]{32}$", description="an OTel trace id, hex in any case"
    )
    name: ScoreName
    value: float
    label: str | None = Field(None, max_length=128, description="e.g. thumbs_up, resolved")
    explanation: str | None = Field(None, max_length=2000)
    source: Source = "online"
    kind: Kind = Field("proxy", description="used when the project gives the name no role")
    created_at: EventTime | None = None
    event_id: str | None = Field(None, max_length=200, description="makes re-sends no-ops")


class ScoresBatch(BaseModel):
    scores: list[ScoreItem]


class ScoresAnswer(IngestAnswer):
    pending_traces: int = Field(
        0, description="stored scores whose trace is not stored yet (they join it when it is)"
    )


class ScoreRolesBody(RequestModel):
    model_config = ConfigDict(extra="forbid")

    roles: dict[ScoreName, Kind] = Field(
        default_factory=dict,
        max_length=500,
        description="score name -> proxy | true | guardrail; other names keep their own kind",
    )
    label_sources: list[Source] = Field(
        default_factory=lambda: list(DEFAULT_LABEL_SOURCES),
        description="sources whose true scores are ground-truth labels",
    )


class ScoreRolesOut(ResponseModel):
    roles: dict[str, str] = Field(description="score name -> proxy | true | guardrail")
    label_sources: list[str]
