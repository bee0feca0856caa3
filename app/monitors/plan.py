"""A run's plan: what one monitor run will compare, decided before any row is loaded.

The first stage of a run (:mod:`app.monitors.runner`): the monitor as it stands, its
baseline policy and state, the time ranges the run compares and the detector it calls,
frozen together in a :class:`RunPlan`. The later stages (load, detect, record) read the
plan and never reach back: which ranges are compared is decided here, by
:mod:`app.monitors.decision.baseline` (a lagged rolling reference, frozen while an alert
is open) and :mod:`app.monitors.decision.version_baseline`; the detector's level comes
from the monitor's false-alert budget (:mod:`app.monitors.decision.calibration`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from app.db import as_utc
from app.models import Monitor
from app.monitors.decision import baseline, calibration, version_baseline
from app.monitors.decision import state as monitor_state
from app.monitors.decision.baseline import BaselinePolicy, Windows
from app.monitors.detection import Detector
from app.monitors.windows import history
from app.monitors.windows.cache import WindowCache
from detectors import registry

log = logging.getLogger("telltale.monitors")

DetectorFactory = Callable[[str, Mapping[str, Any]], Detector]


@dataclass(frozen=True)
class RunPlan:
    """One run, decided. ``monitor`` is a detached copy: what the run reads of it cannot
    change under it; the record stage writes through the monitor's live row."""

    monitor: Monitor
    policy: BaselinePolicy
    state: monitor_state.MonitorState
    windows: Windows
    now: datetime  # the run's time stamp
    as_of: datetime  # where the windows end: the cycle's ``now`` (app.monitors.windows.cache)
    scheduled_for: datetime | None = None
    detector: Detector | None = None
    # Why the run gives no verdict before any row is read (no version to compare with, or a
    # reference reaching back before the project's first data).
    no_reference: str | None = None
    # Why the monitor's configuration builds no detector (the run fails).
    build_error: str | None = None
    # What the detector declares (detectors.registry): a fired run also reports whether the
    # error-rate monitors are quiet (FM-6's "silent"); what is counted over a whole sampled
    # window ("labels": FM-4's coverage and delays).
    checks_silence: bool = False
    window_counts: tuple[str, ...] = ()
    # Whether the run's evidence carries one verdict per group, each its own alert (rules).
    alerts_per_group: bool = False

    @property
    def project_id(self) -> int:
        return self.monitor.project_id


def _stepped_aside(
    selection: Mapping[str, Any], begun: datetime | None, now: datetime, alert_open: bool
) -> str | None:
    """Why a monitor that watches only until the calibrated monitors speak (the first-hours
    guards: ``steps_aside_after_seconds``) gives no verdict now. One whose alert is open
    keeps judging until it resolves, so that it can."""
    after = selection.get("steps_aside_after_seconds")
    if after is None or begun is None or alert_open:
        return None
    since = as_utc(begun) + timedelta(seconds=float(after))
    if now < since:
        return None
    return (
        f"stepped aside: the calibrated monitors give verdicts since "
        f"{since.strftime('%Y-%m-%d %H:%M')} UTC"
    )


def plan_run(
    session: Session,
    data: Session,
    *,
    monitor_id: int,
    now: datetime,
    cycle: WindowCache,
    scheduled_for: datetime | None,
    detector_factory: DetectorFactory,
) -> RunPlan | None:
    """The plan for running ``monitor_id`` now, as of the cycle's ``now`` (None: the monitor
    is gone). ``session`` reads the monitor and its state (the primary); ``data`` where the
    project's history begins and which versions it ran (the read engine, when there is one).
    """
    monitor = session.get(Monitor, monitor_id)
    if monitor is None:
        return None
    session.expunge(monitor)
    pid, selection = monitor.project_id, monitor.selection or {}
    state = monitor_state.load(session, monitor.id)
    begun = cycle.history_start(pid, lambda: history.history_start(data, project_id=pid))
    policy = baseline.policy_in_force(
        BaselinePolicy.from_selection(selection), begun, cycle.now,
        judged=lambda: history.judges_an_objective(session, project_id=pid),
    )  # fmt: skip
    w = baseline.windows_for(policy, state.baseline, cycle.now, history_start=begun)
    if baseline.young_reason(policy, replace(w, mode="rolling"), begun) and w.mode == "frozen":
        # An alert opened on a sliver of a young project's first hours (before runs refused
        # such references) is judged against the grown rolling reference: it resolves
        # once that no longer supports it, instead of staying held to the sliver for good.
        w = baseline.windows_for(policy, None, cycle.now, history_start=begun)
    no_reference: str | None = None
    if policy.reference_version:
        found = version_baseline.resolve(
            data, project_id=pid, selection=selection, policy=policy, windows=w
        )
        w, no_reference = found.windows, found.reason
    if no_reference is None and not registry.judges_own_history(monitor.failure_mode):
        no_reference = baseline.young_reason(policy, w, begun)
    if no_reference is None:
        no_reference = _stepped_aside(selection, begun, cycle.now, state.alert_open)
    detector, build_error = None, None
    if no_reference is None:
        try:
            params = calibration.run_params(
                monitor, registry.detector_parameters(monitor.failure_mode)
            )
            detector = detector_factory(monitor.failure_mode, params)
        except Exception as exc:  # the run is recorded as failed, with this as its error
            build_error = f"{type(exc).__name__}: {exc}"[:2000]
            log.warning("monitor %s (%s) failed: %s", monitor.id, monitor.name, build_error)
    return RunPlan(
        monitor, policy, state, w, now, cycle.now, scheduled_for, detector, no_reference,
        build_error, registry.checks_silence(monitor.failure_mode),
        registry.window_counts_of(monitor.failure_mode),
        registry.alerts_per_group(monitor.failure_mode),
    )  # fmt: skip
