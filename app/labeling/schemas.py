"""Request bodies and answers of the labeling API, and the label schema a label is checked
against."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from app.ingest.score_values import SCORE_VALUE_LIMIT, score_value
from app.request_model import RequestModel
from app.response_model import ResponseModel, Time

QUEUE_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
SOURCES = Literal["production", "eval", "shadow"]


class _Strict(RequestModel):
    model_config = ConfigDict(extra="forbid")


class Selection(_Strict):
    """Which samples a queue draws from: embedding streams, agents' traces, trace sources."""

    streams: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(
        default_factory=list, max_length=50
    )
    agents: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(
        default_factory=list, max_length=50
    )
    sources: list[SOURCES] = Field(default_factory=list)

    @model_validator(mode="after")
    def _something_selected(self) -> Selection:
        if not self.streams and not self.agents:
            raise ValueError("select at least one stream or one agent")
        return self


class CategoricalSchema(_Strict):
    type: Literal["categorical"]
    values: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(
        min_length=1, max_length=100
    )
    # Values that mean "the sample was right": labels map to score 1.0 (else 0.0) when
    # written back to a trace. Without it, categorical labels are not written back.
    correct_values: list[str] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> CategoricalSchema:
        if len(set(self.values)) != len(self.values):
            raise ValueError("values must be unique")
        unknown = [v for v in self.correct_values or [] if v not in self.values]
        if unknown:
            raise ValueError(f"correct_values {unknown} are not among values")
        return self


class ScoreSchema(_Strict):
    type: Literal["score"]
    # Its labels are written back as scores: within the scores' bound (app.ingest.score_values).
    min: float = Field(ge=-SCORE_VALUE_LIMIT, le=SCORE_VALUE_LIMIT)
    max: float = Field(ge=-SCORE_VALUE_LIMIT, le=SCORE_VALUE_LIMIT)

    @model_validator(mode="after")
    def _ordered(self) -> ScoreSchema:
        if not (math.isfinite(self.min) and math.isfinite(self.max)) or self.min >= self.max:
            raise ValueError("min and max must be finite with min < max")
        return self


LabelSchema = Annotated[CategoricalSchema | ScoreSchema, Field(discriminator="type")]


class QueueCreate(_Strict):
    name: str = Field(min_length=1, max_length=128, pattern=QUEUE_NAME)
    description: str = Field(default="", max_length=2000)
    selection: Selection
    label_schema: LabelSchema
    label_name: str = Field(default="success", min_length=1, max_length=128)
    budget_per_period: int = Field(ge=1, le=100_000)
    fill_interval_seconds: int = Field(default=3600, ge=10, le=30 * 86400)
    lease_seconds: int = Field(default=300, ge=5, le=86400)
    reference_size: int = Field(default=2000, ge=1, le=1_000_000)


class QueueUpdate(_Strict):
    description: str | None = Field(default=None, max_length=2000)
    selection: Selection | None = None
    label_schema: LabelSchema | None = None
    label_name: str | None = Field(default=None, min_length=1, max_length=128)
    budget_per_period: int | None = Field(default=None, ge=1, le=100_000)
    fill_interval_seconds: int | None = Field(default=None, ge=10, le=30 * 86400)
    lease_seconds: int | None = Field(default=None, ge=5, le=86400)
    reference_size: int | None = Field(default=None, ge=1, le=1_000_000)


class ClaimRequest(_Strict):
    n: int = Field(default=5, ge=1, le=100)
    lease_seconds: int | None = Field(default=None, ge=5, le=86400)


class LeaseRequest(_Strict):
    lease_token: str = Field(min_length=1, max_length=64)


class LabelRequest(LeaseRequest):
    label: str | float | int | bool
    comment: str | None = Field(default=None, max_length=10_000)

    @field_validator("label")
    @classmethod
    def _no_bool(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError("a label is a string (categorical) or a number (score), not a bool")
        return v


class LabelOutsideSchema(ValueError):
    """The label does not fit the queue's schema (the API answers 422)."""


def check_label(schema: dict[str, Any], label: Any) -> tuple[Any, float | None]:
    """Validate ``label`` against a stored schema; return (stored value, score value or None).

    The score value is what is written back to a trace: the number itself for a score
    schema, 1.0/0.0 for categorical values mapped through ``correct_values``.
    """
    if schema["type"] == "categorical":
        if not isinstance(label, str) or label not in schema["values"]:
            raise LabelOutsideSchema(f"label: must be one of {schema['values']}, got {label!r}")
        correct = schema.get("correct_values")
        return label, (None if correct is None else float(label in correct))
    if isinstance(label, bool) or not isinstance(label, int | float):
        raise LabelOutsideSchema(f"label: must be a number, got {label!r}")
    # A schema stored before the bound may be wider than it: the bound holds anyway.
    value = score_value(label)
    if value is None or not schema["min"] <= value <= schema["max"]:
        low = max(schema["min"], -SCORE_VALUE_LIMIT)
        high = min(schema["max"], SCORE_VALUE_LIMIT)
        raise LabelOutsideSchema(
            f"label: must be a number in [{low:g}, {high:g}], got {label!r:.40}"
        )
    return value, value


class QueueOut(ResponseModel):
    name: str
    description: str
    selection: dict[str, Any]
    label_schema: dict[str, Any]
    label_name: str
    budget_per_period: int
    fill_interval_seconds: int
    lease_seconds: int
    reference_size: int
    last_filled_at: Time | None
    created_at: Time
    updated_at: Time


class QueueWithItems(QueueOut):
    items: dict[str, int] = Field(description="items per status")


class QueueList(ResponseModel):
    queues: list[QueueWithItems]


class FillOut(ResponseModel):
    queue: str
    added: int
    from_selector: int
    from_label_requests: int
    judge_checks: int = Field(0, description="judged traces queued so labels measure the judge")
    boosted: int
    candidates: int
    budget_left: int
    notes: list[str]


class TraceSummary(ResponseModel):
    trace_id: str
    agent: str
    agent_version: str
    status: str
    decision: Any
    task_type: Any
    confidence: Any
    steps: int
    source: str
    started_at: Time | None
    text: str | None
    output: str | None


class SampleOut(ResponseModel):
    key: str
    kind: Literal["trace", "media", "embedding"]
    stream: str | None
    embedding_id: int | None
    sample_id: str | None
    time: Time | None
    trace: TraceSummary | None
    text: str | None
    image_url: str | None
    has_content: bool = Field(
        True, description="false: no image, text or trace was stored with it (skip it)"
    )


class ClaimedItem(ResponseModel):
    id: int
    queue: str
    lease_token: str | None
    lease_expires_at: Time | None
    priority: float
    novelty: float | None
    boost: float
    reason: str
    why: str = Field("", description="the reason in an annotator's words")
    label_schema: dict[str, Any]
    sample: SampleOut


class ClaimedItems(ResponseModel):
    items: list[ClaimedItem]


class LabelSaved(ResponseModel):
    id: int
    item_id: int
    label: str | float
    score_value: float | None
    score_written: bool
    created_at: Time


class LeaseEnded(ResponseModel):
    item_id: int
    status: Literal["skipped", "pending"]


class LeaseReturned(ResponseModel):
    """An undone answer: the item is leased again to the annotator who gave it."""

    item_id: int
    undone: Literal["labeled", "skipped"]
    status: Literal["leased"]
    lease_token: str
    lease_expires_at: Time


class RejectedLabelOut(ResponseModel):
    id: int
    label: str | float
    comment: str | None


class LeaseLost(ResponseModel):
    """409: the lease is gone; ``detail`` says what to do, the label is kept for resending."""

    detail: str
    code: str
    item_id: int
    rejected_label: RejectedLabelOut | None = None


class AnnotatorStats(ResponseModel):
    key_id: int
    key_prefix: str | None
    labeled: int
    labeled_in_window: int
    labels_per_hour: float
    first_label_at: Time | None
    last_label_at: Time | None
    skipped: int


class QueueStats(ResponseModel):
    queue: str
    depth: int
    pending: int
    leased: int
    expired_leases: int
    labeled: int
    skipped: int
    total: int
    window_hours: float
    annotators: list[AnnotatorStats]
    last_filled_at: Time | None
    label_schema: dict[str, Any]
    now: Time
