"""The answer of ``GET /api/v1/monitors/{id}/readiness`` (:mod:`app.monitors.readiness.report`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from app.response_model import ResponseModel


class RemedyOut(ResponseModel):
    how: Literal["attribute", "instrumentation", "config", "score_roles", "api", "note", "evaluator"]
    text: str


class NeedOut(ResponseModel):
    need: str = Field(description="a name from detectors.needs.NEEDS")
    description: str
    present: bool
    count: int = Field(description="traces carrying it (FM-6: vectors)")
    of: int | None = Field(description="traces in the window (FM-6: null)")
    detail: dict[str, Any]
    remedies: list[RemedyOut] = Field(description="how to send it; empty when present")
    optional: bool = Field(
        False, description="missing, but the monitor gives its verdict without it"
    )


class ScoreNameOut(ResponseModel):
    name: str
    sent_as: str = Field(description="the kind the scores were stored with")
    source: str
    read_as: str = Field(description="the kind detectors read, the project's roles applied")
    scores: int
    traces: int


class WindowOut(ResponseModel):
    start: str
    end: str


class LastRunOut(ResponseModel):
    at: str
    status: str
    reason: str | None = Field(None, description="why the run gave no verdict")


class CountedByRunOut(ResponseModel):
    id: int
    at: str


class ReadinessOut(ResponseModel):
    monitor_id: int
    failure_mode: str
    status: Literal["ready", "partial", "insufficient", "missing", "no_data"]
    window: WindowOut
    traces: int | None = Field(description="traces in the current window (FM-6: null)")
    counted_traces: int | None = Field(
        None, description="traces span and score needs were counted on (a stride past 20,000)"
    )
    scores: list[ScoreNameOut] = []
    needs: list[NeedOut]
    counted_by_run: CountedByRunOut | None = Field(
        None, description="the run whose window counts these are (null: counted on request)"
    )
    last_run: LastRunOut | None = Field(
        None, description="the latest run on this window: insufficient_data says why"
    )
