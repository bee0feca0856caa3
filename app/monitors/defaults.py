"""The default monitors, one per failure mode, OUTCOME, SILENCE and EARLY, created by
``POST /monitors/defaults``.

Every default compares a trailing 2-hour window with a 4-hour baseline (the set-up the
detection bench calibrates: ``bench/detection.py``) from the same hours the day before
(lagged 22 hours: a 24-hour ramp is then compared with traffic from before it began,
where a 2-hour lag saw it as a constant small difference; ``bench/alerting.py``), frozen
while an alert is open (:mod:`app.monitors.decision.baseline`), every 15 minutes, at the per-run alpha that
gives 30 days between false alerts (:mod:`app.monitors.decision.calibration`). FM-6 watches every embedding stream but the per-trace
``<agent>.output`` streams (FM-3's): the derived ``<agent>.input`` text streams included.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Monitor
from app.monitors.schemas import MonitorCreate
from app.monitors.store import create_monitor

WINDOW = {
    "current_window_seconds": 2 * 3600,
    "reference_window_seconds": 4 * 3600,
    # Shrinks to what a young history allows (app.monitors.windows.history): no 28 h wait.
    "baseline_lag_seconds": 22 * 3600,
}
DEFAULTS: tuple[dict[str, Any], ...] = (
    {"failure_mode": "FM-1", "name": "FM-1 compounding decision errors", "severity": "critical"},
    {"failure_mode": "FM-2", "name": "FM-2 tool failure cascades", "severity": "critical"},
    {"failure_mode": "FM-3", "name": "FM-3 non-deterministic output drift", "severity": "warning"},
    {
        "failure_mode": "FM-4",
        "name": "FM-4 ground-truth absence",
        "severity": "warning",
        # The drop must exceed min_drop at the run's 1 - alpha confidence, and the ERT puts
        # alpha near 2e-4: the library's 0.05 margin on top of that confidence needed ~10 h
        # of a moderate (0.15) drop at 80 traces/h (bench/alerting.py); 0.02 sees it in 2 h
        # and is still no "trivia" (a 2-point accuracy loss, with near certainty).
        "detector_params": {"min_drop": 0.02},
        # Labels arrive hours late and often for a share of traces only: the label-free
        # estimate and the label-coverage test read the same 8-hour window as OUTCOME,
        # against a day of baseline (every hour of the day, ~4x the labels of 8 hours).
        "selection": {
            **WINDOW,
            "current_window_seconds": 8 * 3600,
            "reference_window_seconds": 24 * 3600,
        },
    },
    {"failure_mode": "FM-5", "name": "FM-5 evaluation harness overfitting", "severity": "warning"},
    {
        "failure_mode": "FM-6",
        "name": "FM-6 silent embedding drift",
        "severity": "warning",
        # MMD, not the cosine-to-centroid KS test: a new cluster as far from the centroid as
        # the old ones is invisible to the KS test (bench/detection.py: 76% vs 100% at
        # moderate strength, both with ~2% false alarms). No alpha: the ERT sets it.
        # 2,000 vectors per window and stream: a real drift cannot stop the permutation test
        # early, so it draws all ~23,000 permutations a 30-day ERT asks for; with 5,000
        # (the library's default) FM-6 took 103 s on bench/scale's FM-5-injected traffic at
        # 10,000 traces/h and hit its 60 s time limit exactly when the drift was there;
        # with 2,000, 22 s and the same verdict. Windows below it are not subsampled.
        "detector_params": {"method": "mmd", "max_samples": 2000},
    },
    {"failure_mode": "FM-7", "name": "FM-7 proxy goal convergence", "severity": "critical"},
    # What every failure mode ends in: a true objective that falls alerts by itself, with
    # no proxy, confidence or eval traffic needed (detectors/outcomes.py).
    {
        "failure_mode": "OUTCOME",
        "name": "Outcomes: task success, errors, latency",
        "severity": "critical",
        # Labels arrive hours late: a 2-hour window of τ-bench replays at 80 traces/h held
        # ~35 labels, too few to see success fall 0.42 -> 0.20 for 8 h. The detector tests
        # objectives on this 8-hour window and on its recent 4 hours (~180 labels 4 h after
        # a change), everything else on the recent 4 hours (bench/real_traffic.py). The
        # baseline is a whole day: with a quarter of traces labeled, 8 hours of it held
        # ~160 labels, and one seed's fall waited 20 h for the test to clear its threshold.
        "selection": {
            **WINDOW,
            "current_window_seconds": 8 * 3600,
            "reference_window_seconds": 24 * 3600,
            # With an online evaluator predicting an objective, a judge scores every trace
            # within minutes: the first day runs on the other defaults' windows (2 h against
            # 4 h), so the first verdict comes after 8 h, not 24 (baseline.policy_in_force).
            "young_windows": {
                "current_window_seconds": 2 * 3600,
                "reference_window_seconds": 4 * 3600,
            },
        },
    },
    # Silence is a failure: traffic, content capture, tool spans, scores or vectors that
    # stop or fall far below the same hours of earlier days (detectors/silence.py). It
    # reads counts, so it runs every 5 minutes and judges the last 15 minutes and hour
    # (app/monitors/windows/arrivals.py); the selection's windows only set when a young
    # project's first verdict comes: after 1.5 h (an hour, and 30 minutes before it).
    {
        "failure_mode": "SILENCE",
        "name": "Silence: traffic or a signal that stops",
        "severity": "critical",
        "interval_seconds": 300,
        # Two clean runs: a silence resolves within ~15 minutes of the data returning.
        "auto_resolve_after": 2,
        "selection": {
            "current_window_seconds": 3600,
            "reference_window_seconds": 1800,
            "baseline_lag_seconds": 0,
        },
    },
    # The first day: until the calibrated monitors give verdicts (OUTCOME's after 24 h),
    # static guards compare the last 30 minutes with the project's first hour: a tool or
    # the agent failing in most traces, latency three times the first hour's
    # (detectors/first_hours.py). A tool broken from a project's second hour went
    # unreported for 10 h before. It steps aside then (an open alert of its own is still
    # judged until it resolves).
    {
        "failure_mode": "EARLY",
        "name": "First hours: static guards until the calibrated monitors speak",
        "severity": "critical",
        "interval_seconds": 300,
        "auto_resolve_after": 2,
        "selection": {
            "current_window_seconds": 1800,
            "reference_window_seconds": 3600,
            "baseline_lag_seconds": 0,
            "reference_from_first_data": True,
            "steps_aside_after_seconds": 24 * 3600,
        },
    },
)


def default_monitor_bodies(
    *, interval_seconds: int = 900, detector_params: dict[str, dict[str, Any]] | None = None
) -> list[MonitorCreate]:
    """The ten bodies; ``detector_params`` overrides parameters per failure mode."""
    overrides = detector_params or {}
    out = []
    for spec in DEFAULTS:
        params = {**spec.get("detector_params", {}), **overrides.get(spec["failure_mode"], {})}
        out.append(
            MonitorCreate.model_validate(
                {
                    "name": spec["name"],
                    "failure_mode": spec["failure_mode"],
                    "severity": spec["severity"],
                    "detector_params": params,
                    "selection": spec.get("selection", WINDOW),
                    "interval_seconds": spec.get("interval_seconds", interval_seconds),
                    "auto_resolve_after": spec.get("auto_resolve_after", 3),
                }
            )
        )
    return out


def create_defaults(
    session: Session,
    *,
    project_id: int,
    interval_seconds: int = 900,
    detector_params: dict[str, dict[str, Any]] | None = None,
) -> list[Monitor]:
    """Create the defaults the project lacks (by name); return all ten."""
    existing = {
        m.name: m for m in session.scalars(select(Monitor).where(Monitor.project_id == project_id))
    }
    out = []
    for body in default_monitor_bodies(
        interval_seconds=interval_seconds, detector_params=detector_params
    ):
        monitor = existing.get(body.name) or create_monitor(
            session, project_id=project_id, body=body
        )
        out.append(monitor)
    return out


# Made with the first evaluator that predicts an objective (app/evaluators/store.py), not
# among the defaults: it has nothing to judge without one. Its windows are OUTCOME's, whose
# labels it reads (a day of baseline holds ~4x the labels of the 8-hour window).
JUDGE_MONITOR: dict[str, Any] = {
    "failure_mode": "JUDGE",
    "name": "Judge agreement with the labels",
    "severity": "warning",
    "selection": {**WINDOW, "current_window_seconds": 8 * 3600,
                  "reference_window_seconds": 24 * 3600},
}  # fmt: skip


def ensure_judge_monitor(session: Session, *, project_id: int) -> Monitor:
    """The project's judge-agreement monitor, created if it has none."""
    return _ensure(session, project_id=project_id, spec=JUDGE_MONITOR)


def _ensure(session: Session, *, project_id: int, spec: dict[str, Any]) -> Monitor:
    """The project's monitor of ``spec``'s failure mode, made from ``spec`` if it has none:
    the monitors a project's data bring rather than the defaults (JUDGE, ISSUES)."""
    found = session.scalar(select(Monitor).where(
        Monitor.project_id == project_id, Monitor.failure_mode == spec["failure_mode"]))  # fmt: skip
    if found is not None:
        return found
    return create_monitor(session, project_id=project_id, body=MonitorCreate.model_validate(
        {**spec, "interval_seconds": 900, "auto_resolve_after": 3}))  # fmt: skip


# Made with the project's first failure issue (app/issues/record.py), not among the
# defaults: it has nothing to test before one exists. Each issue's share of its agent's
# traces in the last hour against the six before it (detectors/issue_rates.py), the
# windows bench/real_traffic.py measured (0 false alerts in 48 clean hours, 4 seeds).
ISSUES_MONITOR: dict[str, Any] = {
    "failure_mode": "ISSUES",
    "name": "Failure issues: new or rising",
    "severity": "warning",
    "selection": {},
}


def ensure_issues_monitor(session: Session, *, project_id: int) -> Monitor:
    """The project's new-or-rising-issue monitor, created if it has none."""
    return _ensure(session, project_id=project_id, spec=ISSUES_MONITOR)
