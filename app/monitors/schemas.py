"""Request bodies of the monitor routes (pydantic errors name the field: 422) and their answers."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from app.domain import DetectorMode, Severity
from app.models.base import UTCTime
from app.request_model import RequestModel
from app.response_model import ResponseModel, Time

Source = Literal["production", "eval", "shadow"]

# The shortest interval a monitor may have. Every run takes the scheduler's time (a tick
# runs monitors one after another) and a detector slot; at 1 s, one project's monitors
# could fill every tick. Rows stored below it before it existed are scheduled at it
# (app.scheduler.leader).
MIN_INTERVAL_SECONDS = 60
MAX_INTERVAL_SECONDS = 7 * 86400


def _interval_in_bounds(seconds: int) -> int:
    """The 422 says the bound in a monitor's terms (pydantic's own words were "Input should
    be greater than or equal to 60")."""
    if seconds < MIN_INTERVAL_SECONDS:
        raise PydanticCustomError(
            "interval_too_short",
            "a monitor runs at most once a minute ({floor} s); got {got}",
            {"floor": MIN_INTERVAL_SECONDS, "got": seconds},
        )
    if seconds > MAX_INTERVAL_SECONDS:
        raise PydanticCustomError(
            "interval_too_long",
            "a monitor runs at least once a week ({ceiling} s); got {got}",
            {"ceiling": MAX_INTERVAL_SECONDS, "got": seconds},
        )
    return seconds


# Seconds between a monitor's runs; the bounds stay in the OpenAPI schema.
IntervalSeconds = Annotated[
    int,
    AfterValidator(_interval_in_bounds),
    Field(json_schema_extra={"minimum": MIN_INTERVAL_SECONDS, "maximum": MAX_INTERVAL_SECONDS}),
]


class YoungWindows(RequestModel):
    """Shorter windows a monitor uses until its own windows give a first verdict
    (:func:`app.monitors.decision.baseline.policy_in_force`)."""

    model_config = ConfigDict(extra="forbid")

    current_window_seconds: int = Field(gt=0, le=366 * 86400)
    reference_window_seconds: int = Field(gt=0, le=366 * 86400)
    requires_judge: bool = Field(
        True, description="only while an enabled online evaluator predicts an objective"
    )


class Selection(RequestModel):
    """Which data a run reads: windows are relative to the run's ``now``.

    The current window is ``[now - current_window_seconds, now)``. The reference is the
    ``reference_window_seconds`` ending ``baseline_lag_seconds`` (default: one current
    window) before the current window starts; it stays frozen while an alert is open and
    for ``baseline_hold_seconds`` (default: lag + reference) after it resolves. A pinned
    reference ``[reference_start, reference_end)`` replaces it (:mod:`app.monitors.decision.baseline`),
    or ``reference_version`` does: the last reference window of the traffic of the version
    before the current window's (``"previous"``) or of a named one
    (:mod:`app.monitors.decision.version_baseline`).
    """

    model_config = ConfigDict(extra="forbid")

    agent: str | None = Field(None, max_length=128)
    stream: str | None = Field(None, max_length=128, description="FM-6 only; default: all")
    source: Source | None = None
    current_window_seconds: int = Field(3600, gt=0, le=366 * 86400)
    reference_window_seconds: int = Field(6 * 3600, gt=0, le=366 * 86400)
    baseline_lag_seconds: int | None = Field(None, ge=0, le=366 * 86400)
    baseline_hold_seconds: int | None = Field(None, ge=0, le=366 * 86400)
    reference_start: UTCTime | None = None
    reference_end: UTCTime | None = None
    reference_version: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        description='"previous" (the version before the current window\'s) or an agent_version',
    )
    max_traces: int = Field(20_000, gt=0, le=500_000)
    reference_from_first_data: bool = Field(
        False, description="the reference is the project's first reference window of data"
    )
    steps_aside_after_seconds: int | None = Field(
        None, gt=0, le=366 * 86400,
        description="no new alert this long after the project's first data (first-hours guards)",
    )  # fmt: skip
    young_windows: YoungWindows | None = Field(
        None, description="shorter windows until this selection's first verdict is due"
    )

    @model_validator(mode="after")
    def _young_shorter(self) -> Selection:
        young = self.young_windows
        if young is not None and (
            young.current_window_seconds > self.current_window_seconds
            or young.reference_window_seconds > self.reference_window_seconds
        ):
            raise ValueError(
                "young_windows: its windows must be no longer than the selection's own"
            )
        return self

    @model_validator(mode="after")
    def _frozen_reference(self) -> Selection:
        if (self.reference_start is None) != (self.reference_end is None):
            raise ValueError("reference_start and reference_end must be given together")
        if (
            self.reference_start is not None
            and self.reference_end is not None
            and self.reference_start >= self.reference_end
        ):
            raise ValueError("reference_start must be before reference_end")
        if self.reference_version is not None and self.reference_start is not None:
            raise ValueError(
                "reference_version: a version baseline replaces reference_start/reference_end;"
                " give one or the other"
            )
        return self


class MonitorCreate(RequestModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    failure_mode: DetectorMode  # rules are made through /api/v1/rules
    detector_params: dict[str, Any] = Field(default_factory=dict)
    selection: Selection = Field(default_factory=lambda: Selection.model_validate({}))
    interval_seconds: IntervalSeconds = 300
    severity: Severity = "warning"
    labels: dict[str, str] = Field(default_factory=dict)
    enabled: bool = True
    auto_resolve_after: int = Field(3, ge=1, le=1000)
    repeat_interval_seconds: int = Field(3600, ge=0, le=30 * 86400)
    time_limit_seconds: float = Field(60.0, gt=0, le=3600)
    expected_days_between_false_alerts: float = Field(
        30.0,
        gt=0,
        le=3650,
        description="false-alert budget: the per-run alpha is interval / this (unless "
        "detector_params.alpha overrides it)",
    )
    sequential: bool = Field(
        True, description="an EWMA chart over the runs' p-values catches slow change"
    )
    for_seconds: int = Field(
        0, ge=0, le=7 * 86400, description="runs must keep firing this long before an alert"
    )


class MonitorPatch(RequestModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, min_length=1, max_length=128)
    detector_params: dict[str, Any] | None = None
    selection: Selection | None = None
    interval_seconds: IntervalSeconds | None = None
    severity: Severity | None = None
    labels: dict[str, str] | None = None
    enabled: bool | None = None
    auto_resolve_after: int | None = Field(None, ge=1, le=1000)
    repeat_interval_seconds: int | None = Field(None, ge=0, le=30 * 86400)
    time_limit_seconds: float | None = Field(None, gt=0, le=3600)
    expected_days_between_false_alerts: float | None = Field(None, gt=0, le=3650)
    sequential: bool | None = None
    for_seconds: int | None = Field(None, ge=0, le=7 * 86400)


class RunRequest(RequestModel):
    model_config = ConfigDict(extra="forbid")

    now: UTCTime | None = Field(None, description="evaluate as of this time (default: now)")


class MonitorOut(ResponseModel):
    id: int
    name: str
    failure_mode: str
    detector_params: dict[str, Any]
    selection: dict[str, Any]
    interval_seconds: int
    severity: str
    labels: dict[str, Any]
    enabled: bool
    auto_resolve_after: int
    repeat_interval_seconds: int
    time_limit_seconds: float
    expected_days_between_false_alerts: float
    sequential: bool
    for_seconds: int
    next_run_at: Time | None
    last_run_at: Time | None
    created_at: Time
    updated_at: Time


class MonitorList(ResponseModel):
    monitors: list[MonitorOut]


class RunOut(ResponseModel):
    """One detector run: its windows, statistic against threshold, and evidence."""

    id: int
    monitor_id: int
    failure_mode: str
    at: Time
    scheduled_for: Time | None
    window_start: Time
    window_end: Time
    reference_start: Time | None
    reference_end: Time | None
    status: str
    statistic: float | None
    threshold: float | None
    p_value: float | None
    fired: bool
    evidence: dict[str, Any]
    n_current: int
    n_reference: int
    duration_ms: float
    error: str | None


class RunList(ResponseModel):
    runs: list[RunOut]


class FindingOut(ResponseModel):
    id: int
    monitor_id: int
    run_id: int
    alert_id: int | None
    failure_mode: str
    severity: str
    at: Time
    statistic: float | None
    threshold: float | None
    p_value: float | None
    evidence: dict[str, Any]


class FindingPage(ResponseModel):
    findings: list[FindingOut]
    next_cursor: str | None
