"""An alert rule a team writes: a metric over a filter, optionally grouped, and a condition.

One frozen, validated spec (pydantic, so an error names its field: ``condition.warning``),
read by the API, the preview and every run alike. The metrics and the dimensions each can
be filtered or grouped by are declared in :data:`METRICS`; the service maps each to its
rollup columns (``app/rollups/series.py``).

Conditions:

* :class:`StaticCondition` (Grafana's threshold, Datadog's metric monitor): the window's
  value above or below a ``warning`` and/or ``critical`` level, held for ``for_seconds``
  before it fires (Prometheus's ``for``), with a ``no_data`` mode for an empty window;
* :class:`CalibratedCondition`: Telltale's change test of the window against the rule's
  own recent history, at the level that keeps false alerts to one per
  ``expected_days_between_false_alerts`` (:mod:`detectors.rules.calibrated`).

Examples
--------
>>> spec = RuleSpec.model_validate({
...     "metric": "latency_p95", "filter": {"agent": "checkout"}, "group_by": ["agent_version"],
...     "condition": {"type": "static", "op": "above", "critical": 2000, "for_seconds": 600}})
>>> spec.metric, spec.kind, spec.quantile, spec.condition.for_seconds
('latency_p95', 'quantile', 0.95, 600)
>>> from pydantic import ValidationError
>>> try:
...     RuleSpec.model_validate({"metric": "score_mean",
...                              "condition": {"type": "static", "op": "below", "warning": 0.7}})
... except ValidationError as exc:
...     exc.errors()[0]["loc"], exc.errors()[0]["msg"]
(('filter', 'score_name'), 'Value error, score_mean needs a score name')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError

BUCKET_SECONDS = 300  # the rollups' bucket: evaluation steps and windows are multiples of it

Kind = Literal["count", "per_hour", "ratio", "quantile"]
Dimension = Literal[
    "agent", "agent_version", "environment", "tool", "model", "user", "score_name"
]  # fmt: skip
_TRACE_DIMS = ("agent", "agent_version", "environment")


@dataclass(frozen=True)
class Metric:
    """What a metric computes over a window and which dimensions may filter or group it."""

    kind: Kind
    dimensions: tuple[str, ...]
    unit: str
    label: str
    quantile: float | None = None
    needs: str | None = None  # a dimension the filter must name (score metrics: the score)


def _m(kind: Kind, extra: tuple[str, ...], unit: str, label: str, **kw: Any) -> Metric:
    return Metric(kind, _TRACE_DIMS + extra, unit, label, **kw)


# The user dimension is its own rollup (too wide to key the others by): the trace counts,
# errors, tokens and cost have it; latency, tools, models, scores and loops do not.
METRICS: dict[str, Metric] = {
    "trace_count": _m("count", ("user",), "traces", "traces"),
    "trace_error_rate": _m("ratio", ("user",), "ratio", "trace error rate"),
    "tool_error_rate": _m("ratio", ("tool",), "ratio", "tool error rate"),
    "latency_p50": _m("quantile", ("tool",), "ms", "p50 latency", quantile=0.5),
    "latency_p95": _m("quantile", ("tool",), "ms", "p95 latency", quantile=0.95),
    "latency_p99": _m("quantile", ("tool",), "ms", "p99 latency", quantile=0.99),
    "tokens": _m("count", ("model", "user"), "tokens", "tokens"),
    "tokens_per_trace": _m("ratio", ("user",), "tokens", "tokens per trace"),
    "cost": _m("count", ("model", "user"), "USD", "cost"),
    "cost_per_trace": _m("ratio", ("user",), "USD", "cost per trace"),
    "cost_per_hour": _m("per_hour", ("model", "user"), "USD/h", "cost per hour"),
    "score_mean": _m("ratio", ("score_name",), "score", "mean score", needs="score_name"),
    "score_pass_rate": _m("ratio", ("score_name",), "ratio", "score pass rate", needs="score_name"),
    "label_coverage": _m("ratio", (), "ratio", "label coverage"),
    "loop_rate": _m("ratio", (), "ratio", "loop rate"),
}
MetricName = Literal[
    "trace_count", "trace_error_rate", "tool_error_rate", "latency_p50", "latency_p95",
    "latency_p99", "tokens", "tokens_per_trace", "cost", "cost_per_trace", "cost_per_hour",
    "score_mean", "score_pass_rate", "label_coverage", "loop_rate",
]  # fmt: skip
# The user rollup holds no agent, version or environment: a user rule filters by user alone.
USER_ALONE = frozenset({"user"})
MAX_GROUPS = 50  # a grouped rule watches its busiest groups, at most this many

Value = Annotated[str, Field(min_length=1, max_length=128)]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RuleFilter(_Frozen):
    """Exact values the rule's traffic must have (none: all of it)."""

    agent: Value | None = None
    agent_version: Value | None = None
    environment: Value | None = None
    tool: Value | None = None
    model: Value | None = None
    user: Value | None = None
    score_name: Value | None = None

    def given(self) -> dict[str, str]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class StaticCondition(_Frozen):
    type: Literal["static"] = "static"
    op: Literal["above", "below"]
    warning: float | None = Field(None, allow_inf_nan=False)
    critical: float | None = Field(None, allow_inf_nan=False)
    for_seconds: int = Field(0, ge=0, le=7 * 86400, description="held this long before firing")
    no_data: Literal["ok", "alerting", "keep"] = Field(
        "ok", description="an empty window: clean, firing, or as the evaluation before"
    )

    @model_validator(mode="after")
    def _levels(self) -> StaticCondition:
        if self.warning is None and self.critical is None:
            raise _error("warning", "give a warning level, a critical level or both")
        if self.warning is not None and self.critical is not None:
            worse = (
                self.critical >= self.warning
                if self.op == "above"
                else self.critical <= self.warning
            )
            if not worse:
                side = "at or above" if self.op == "above" else "at or below"
                raise _error("critical", f"must be {side} the warning level ({self.warning:g})")
        return self


class CalibratedCondition(_Frozen):
    type: Literal["calibrated"] = "calibrated"
    direction: Literal["up", "down", "both"] = Field("up", description="the change that alerts")
    expected_days_between_false_alerts: float = Field(30.0, gt=0, le=3650)
    reference_seconds: int = Field(
        7 * 86400, ge=3600, le=30 * 86400, description="the history each window is tested against"
    )
    min_relative_change: float = Field(
        0.1, ge=0, le=100, description="a smaller change never alerts, however significant"
    )
    severity: Literal["warning", "critical"] = "warning"
    for_seconds: int = Field(0, ge=0, le=7 * 86400, description="held this long before firing")
    no_data: Literal["ok", "alerting", "keep"] = "ok"

    @field_validator("reference_seconds")
    @classmethod
    def _whole_buckets(cls, v: int) -> int:
        return _multiple(v)


Condition = Annotated[StaticCondition | CalibratedCondition, Field(discriminator="type")]


class RuleSpec(_Frozen):
    metric: MetricName
    filter: RuleFilter = Field(default_factory=RuleFilter)
    group_by: tuple[Dimension, ...] = Field((), max_length=3)
    window_seconds: int = Field(900, ge=BUCKET_SECONDS, le=86400)
    evaluation_delay_seconds: int = Field(
        120, ge=0, le=3600, description="how long after a bucket ends its traffic is complete"
    )
    condition: Condition

    @field_validator("window_seconds")
    @classmethod
    def _whole(cls, v: int, info: ValidationInfo) -> int:
        return _multiple(v)

    @model_validator(mode="after")
    def _dimensions(self) -> RuleSpec:
        m = METRICS[self.metric]
        given = self.filter.given()
        for name in given:
            if name not in m.dimensions:
                raise _error(f"filter.{name}", f"{self.metric} cannot be filtered by {name}")
        for i, name in enumerate(self.group_by):
            if name not in m.dimensions:
                raise _error(f"group_by.{i}", f"{self.metric} cannot be grouped by {name}")
            if name in self.group_by[:i]:
                raise _error(f"group_by.{i}", f"{name} is named twice")
        used = set(given) | set(self.group_by)
        if "user" in used and used - USER_ALONE:
            others = ", ".join(sorted(used - USER_ALONE))
            raise _error("filter.user", f"a user rule cannot also filter or group by {others}")
        if m.needs is not None and m.needs not in given:
            raise _error(f"filter.{m.needs}", f"{self.metric} needs a score name")
        return self

    @property
    def kind(self) -> Kind:
        return METRICS[self.metric].kind

    @property
    def quantile(self) -> float | None:
        return METRICS[self.metric].quantile

    @property
    def window_buckets(self) -> int:
        return self.window_seconds // BUCKET_SECONDS


def step_seconds(interval_seconds: int) -> int:
    """The time between a rule's evaluation steps: its interval in whole buckets (at least
    one; a monitor run more often than that re-reads its latest step).

    >>> step_seconds(600), step_seconds(60)
    (600, 300)
    """
    return max(1, interval_seconds // BUCKET_SECONDS) * BUCKET_SECONDS


def _multiple(v: int) -> int:
    if v % BUCKET_SECONDS:
        raise ValueError(f"must be a multiple of {BUCKET_SECONDS} s (the rollup bucket)")
    return v


def _error(loc: str, message: str) -> ValidationError:
    """A validation error at ``loc`` (dotted), so the API's 422 names the field."""
    where = tuple(int(p) if p.isdigit() else p for p in loc.split("."))
    detail = InitErrorDetails(
        type=PydanticCustomError("value_error", "Value error, {msg}", {"msg": message}),
        loc=where,
        input=None,
    )
    return ValidationError.from_exception_data("RuleSpec", [detail])
