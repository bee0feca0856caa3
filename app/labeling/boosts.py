"""Where detectors fired: windows that boost a sample's priority, and FM-4 label requests.

Read from the engine's ``detector_runs`` (joined to ``monitors`` for the stream or agent a
run watched). A run is a window [window_start, window_end] of one stream (FM-6), one agent
(FM-4) or the project's outcomes (OUTCOME: a fall in what the traces end in is where a
label tells most); samples whose time falls in a fired window are worth labeling first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models.monitors import DetectorRun, Monitor

BOOST_MODES = ("FM-6", "FM-4", "OUTCOME")
WHAT = {"FM-6": "drift", "FM-4": "accuracy drop", "OUTCOME": "outcome change"}
BOOST_WEIGHT = 2.0


@dataclass(frozen=True)
class FiredWindow:
    failure_mode: str
    monitor: str
    stream: str | None
    agent: str | None
    start: datetime
    end: datetime
    at: datetime

    def covers(self, *, stream: str | None, agent: str | None, time: datetime | None) -> bool:
        if time is None or not self.start <= time <= self.end:
            return False
        if self.stream is not None:
            return stream == self.stream
        if self.agent is not None:
            return agent == self.agent or (stream or "").startswith(self.agent + ".")
        return True  # a project-wide run covers every sample of its window

    def describe(self) -> str:
        scope = (
            f"stream {self.stream}"
            if self.stream
            else f"agent {self.agent}"
            if self.agent
            else "project"
        )
        what = WHAT.get(self.failure_mode, "change")
        return (
            f"{self.failure_mode} {what} fired on {scope} "
            f"({self.monitor}, window {self.start:%Y-%m-%d %H:%M}–{self.end:%H:%M} UTC)"
        )


def fired_windows(
    session: Session, *, project_id: int, start: datetime, end: datetime
) -> list[FiredWindow]:
    """FM-6, FM-4 and OUTCOME runs that fired with a window overlapping [start, end]."""
    rows = session.execute(
        select(DetectorRun, Monitor.name, Monitor.selection)
        .join(Monitor, Monitor.id == DetectorRun.monitor_id)
        .where(
            DetectorRun.project_id == project_id,
            DetectorRun.failure_mode.in_(BOOST_MODES),
            DetectorRun.fired.is_(True),
            DetectorRun.window_end >= start,
            DetectorRun.window_start <= end,
        )
        .order_by(DetectorRun.at.desc())
    ).all()
    return [_window(run, name, selection) for run, name, selection in rows]


def boost_for(
    windows: list[FiredWindow], *, stream: str | None, agent: str | None, time: datetime | None
) -> tuple[float, FiredWindow | None]:
    """(weight, the most recent window that covers the sample) — weight 1.0 when none does."""
    for w in windows:
        if w.covers(stream=stream, agent=agent, time=time):
            return BOOST_WEIGHT, w
    return 1.0, None


@dataclass(frozen=True)
class LabelRequest:
    """An FM-4 run whose label coverage was too low: label these cohorts in this window."""

    monitor: str
    start: datetime
    end: datetime
    cohorts: list[dict[str, Any]]
    coverage: float | None


def label_requests(session: Session, *, project_id: int, since: datetime) -> list[LabelRequest]:
    """The latest FM-4 run of each monitor since ``since``, when it asked for labels."""
    rows = session.execute(
        select(DetectorRun, Monitor.name)
        .join(Monitor, Monitor.id == DetectorRun.monitor_id)
        .where(
            DetectorRun.project_id == project_id,
            DetectorRun.failure_mode == "FM-4",
            DetectorRun.at >= since,
        )
        .order_by(DetectorRun.monitor_id, DetectorRun.at.desc())
    ).all()
    latest: dict[str, LabelRequest] = {}
    for run, name in rows:
        if name in latest:
            continue
        evidence = run.evidence or {}
        if not evidence.get("needs_labels"):
            latest[name] = LabelRequest(name, run.window_start, run.window_end, [], None)
            continue
        cohorts = [c for c in evidence.get("cohorts_needing_labels") or [] if isinstance(c, dict)]
        if not cohorts:  # overall coverage too low: every cohort of the window
            cohorts = [{}]
        coverage = evidence.get("label_coverage")
        latest[name] = LabelRequest(
            name,
            run.window_start,
            run.window_end,
            cohorts,
            float(coverage) if isinstance(coverage, int | float) else None,
        )
    return [r for r in latest.values() if r.cohorts]


def _window(run: DetectorRun, monitor: str, selection: dict[str, Any] | None) -> FiredWindow:
    sel = selection or {}
    stream = sel.get("stream") if isinstance(sel.get("stream"), str) else None
    agent = sel.get("agent") if isinstance(sel.get("agent"), str) else None
    return FiredWindow(
        failure_mode=run.failure_mode,
        monitor=monitor,
        stream=stream,
        agent=agent,
        start=run.window_start,
        end=run.window_end,
        at=run.at,
    )
