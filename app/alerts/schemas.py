"""Request bodies of the channel and silence routes, and the answers of the alert routes."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.alerts.outbound import parse_url
from app.alerts.patterns import compile_label_pattern
from app.db import as_utc
from app.domain import FailureMode, Severity
from app.request_model import RequestModel
from app.response_model import ResponseModel, Time


class ChannelCreate(RequestModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["webhook", "slack", "pagerduty", "alertmanager"]
    name: str | None = Field(None, min_length=1, max_length=128)
    url: str = Field("", max_length=2048)
    secret: str | None = Field(None, max_length=512)
    routing_key: str | None = Field(None, max_length=128, description="PagerDuty only")
    min_severity: Severity = "info"
    failure_modes: list[FailureMode] = Field(default_factory=list)
    enabled: bool = True
    # Alertmanager's names and defaults (app.alerts.groups); 0 sends each event at once.
    group_wait_seconds: int = Field(
        30, ge=0, le=86400, description="how long a new group waits for alerts to join it"
    )
    group_interval_seconds: int = Field(
        300, ge=0, le=86400, description="least time between two notifications of the group"
    )

    @field_validator("url")
    @classmethod
    def _url_syntax(cls, v: str) -> str:
        # Syntax only; where the host resolves is checked at creation and at each delivery
        # (app.alerts.outbound), against the operator's allow-list.
        if v:
            parse_url(v)
        return v

    @model_validator(mode="after")
    def _type_fields(self) -> ChannelCreate:
        if self.type == "pagerduty":
            if not self.routing_key:
                raise ValueError("routing_key: required for a pagerduty channel")
        elif not self.url:
            raise ValueError(f"url: required for a {self.type} channel")
        return self


class Matcher(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    value: str = Field(max_length=1024)
    op: Literal["=", "!=", "=~", "!~"] = "="

    @model_validator(mode="after")
    def _regex(self) -> Matcher:
        if self.op in ("=~", "!~"):
            try:
                compile_label_pattern(self.value)
            except ValueError as exc:
                raise ValueError(f"value: {exc}") from None
        return self


# A silence lasts at most a year and a day, whichever way its end is given, and starts
# within that time: a silence "until 9999" is a monitor switched off (pause it instead).
MAX_SILENCE_SECONDS = 366 * 86400


class SilenceCreate(RequestModel):
    model_config = ConfigDict(extra="forbid")

    matchers: list[Matcher] = Field(min_length=1, max_length=32)
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    duration_seconds: int | None = Field(None, gt=0, le=MAX_SILENCE_SECONDS)
    comment: str = Field("", max_length=2000)

    @field_validator("starts_at", "ends_at")
    @classmethod
    def _aware(cls, v: datetime | None) -> datetime | None:
        # Stricter than UTCTime: a silence's end is read by people, so no guessing a zone.
        if v is not None and v.tzinfo is None:
            raise ValueError("must include a time zone (e.g. a trailing Z)")
        return None if v is None else as_utc(v)

    @model_validator(mode="after")
    def _expiry(self) -> SilenceCreate:
        if (self.ends_at is None) == (self.duration_seconds is None):
            raise ValueError("ends_at: give exactly one of ends_at or duration_seconds")
        return self


class ChannelOut(ResponseModel):
    """A channel as every role sees it: URL, routing key and name masked (``store.masked``)."""

    id: int
    name: str
    type: str
    url: str
    has_secret: bool
    routing_key: str | None
    min_severity: str
    failure_modes: list[str]
    enabled: bool
    group_wait_seconds: int
    group_interval_seconds: int
    created_at: Time


class ChannelList(ResponseModel):
    channels: list[ChannelOut]


class SilenceOut(ResponseModel):
    id: int
    matchers: list[dict[str, str]]
    starts_at: Time
    ends_at: Time
    comment: str
    created_by: str
    state: Literal["pending", "active", "expired"]


class SilenceList(ResponseModel):
    silences: list[SilenceOut]


class AlertOut(ResponseModel):
    id: int
    fingerprint: str
    monitor_id: int | None
    failure_mode: str
    severity: str
    labels: dict[str, Any]
    state: str
    silenced: bool
    summary: str
    evidence: dict[str, Any]
    count: int
    clean_runs: int
    first_fired_at: Time
    last_fired_at: Time
    last_notified_at: Time | None
    acknowledged_at: Time | None
    acknowledged_by: str | None
    resolved_at: Time | None
    resolved_by: str | None


class AlertList(ResponseModel):
    alerts: list[AlertOut]


class AlertEventOut(ResponseModel):
    id: int
    kind: str
    from_state: str | None
    to_state: str | None
    actor: str
    at: Time
    detail: dict[str, Any]


class AlertDetail(AlertOut):
    events: list[AlertEventOut]
