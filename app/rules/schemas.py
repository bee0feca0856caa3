"""Request bodies of the rule routes (pydantic errors name the field: 422) and their answers.

A rule is a monitor of the ``RULE`` family (:mod:`app.rules.store`): its body is the rule
(:class:`detectors.rules.spec.RuleSpec`, validated once, the same object the runs and the
preview read) and the monitor's own settings that a rule uses (interval, labels, repeat,
auto-resolve, enabled).
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, field_validator

from app.models.base import UTCTime
from app.request_model import RequestModel
from app.response_model import ResponseModel, Time
from detectors.rules.spec import BUCKET_SECONDS, RuleSpec

MAX_PREVIEW_DAYS = 30


def _steps(v: int | None) -> int | None:
    if v is not None and v % BUCKET_SECONDS:
        raise ValueError(f"must be a multiple of {BUCKET_SECONDS} s (the rollup bucket)")
    return v


class RuleSettings(RequestModel):
    """What a rule shares with every monitor."""

    model_config = ConfigDict(extra="forbid")

    interval_seconds: int = Field(
        BUCKET_SECONDS, ge=BUCKET_SECONDS, le=86400, description="evaluated this often"
    )
    auto_resolve_after: int = Field(3, ge=1, le=1000, description="clean evaluations that resolve")

    _interval = field_validator("interval_seconds")(_steps)


class RuleCreate(RuleSettings):
    name: str = Field(min_length=1, max_length=128)
    rule: RuleSpec
    labels: dict[str, str] = Field(default_factory=dict)
    enabled: bool = True
    repeat_interval_seconds: int = Field(3600, ge=0, le=30 * 86400)


class RulePatch(RequestModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, min_length=1, max_length=128)
    rule: RuleSpec | None = None
    interval_seconds: int | None = Field(None, ge=BUCKET_SECONDS, le=86400)
    auto_resolve_after: int | None = Field(None, ge=1, le=1000)
    labels: dict[str, str] | None = None
    enabled: bool | None = None
    repeat_interval_seconds: int | None = Field(None, ge=0, le=30 * 86400)

    _interval = field_validator("interval_seconds")(_steps)


class PreviewRequest(RuleSettings):
    rule: RuleSpec
    days: float = Field(7.0, gt=0, le=MAX_PREVIEW_DAYS, description="how far back to replay")
    now: UTCTime | None = Field(None, description="replay up to this time (default: now)")


class RuleOut(ResponseModel):
    id: int
    name: str
    rule: dict[str, Any]
    interval_seconds: int
    auto_resolve_after: int
    labels: dict[str, Any]
    enabled: bool
    repeat_interval_seconds: int
    severity: str
    last_run_at: Time | None
    created_at: Time
    updated_at: Time


class RuleList(ResponseModel):
    rules: list[RuleOut]


class PreviewPoint(ResponseModel):
    at: Time  # the end of the step's window
    value: float | None
    n: float  # traces, calls or scores in the window (the count itself for counts)
    level: str  # ok | warning | critical (after the no-data mode)
    fired: str | None  # the level that fired (held for ``for``), or None
    baseline: float | None = None  # calibrated: the reference's value
    bound: float | None = None  # calibrated: the value at which the test fires


class PreviewEpisode(ResponseModel):
    group: dict[str, str]
    opened_at: Time
    resolved_at: Time | None
    severity: str
    peak_value: float | None
    fired_evaluations: int


class PreviewGroup(ResponseModel):
    labels: dict[str, str]
    points: list[PreviewPoint]


class PreviewOut(ResponseModel):
    metric: str
    label: str
    unit: str
    condition: str  # static | calibrated
    start: Time
    end: Time
    step_seconds: int
    warning: float | None
    critical: float | None
    groups: list[PreviewGroup]
    groups_dropped: int
    episodes: list[PreviewEpisode]
    server_ms: float
