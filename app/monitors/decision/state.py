"""What a monitor carries from run to run: one ``monitor_baselines`` row.

Where the baseline stands (:mod:`app.monitors.decision.baseline`), the sequential chart
(:mod:`app.monitors.decision.sequential`) and since when fired runs are pending
(``for``): read by the plan stage (:func:`load`), decided on by the decide stage
(:mod:`app.monitors.decide`), written by the record stage (:func:`save`), which also
asks whether the project's error-rate monitors are quiet (:func:`silent_drift`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Alert, Monitor, MonitorBaseline
from app.monitors.decision import sequential
from app.monitors.decision.baseline import BaselineState

# The modes whose alerts say error rates moved; FM-6 drift without them is "silent".
ERROR_RATE_MODES = ("FM-1", "FM-2", "OUTCOME")


@dataclass(frozen=True)
class MonitorState:
    baseline: BaselineState | None = None
    chart: sequential.ChartState = field(default_factory=sequential.ChartState)
    pending_since: datetime | None = None

    @property
    def alert_open(self) -> bool:
        """Whether the last run that tested data left an alert open (the baseline froze)."""
        return self.baseline is not None and self.baseline.frozen_since is not None


def load(session: Session, monitor_id: int) -> MonitorState:
    row = session.get(MonitorBaseline, monitor_id)
    if row is None:
        return MonitorState()
    return MonitorState(
        BaselineState(
            good_until=row.good_until,
            frozen_since=row.frozen_since,
            hold_until=row.hold_until,
            degradation_started_at=row.degradation_started_at,
        ),
        sequential.ChartState(z=row.chart_z, t=row.chart_t, last_window_end=row.chart_window_end),
        row.pending_since,
    )


def save(session: Session, monitor: Monitor, state: MonitorState, now: datetime) -> None:
    if state.baseline is None:
        return
    row = session.get(MonitorBaseline, monitor.id)
    if row is None:
        row = MonitorBaseline(monitor_id=monitor.id, project_id=monitor.project_id)
        session.add(row)
    row.good_until = state.baseline.good_until
    row.frozen_since = state.baseline.frozen_since
    row.hold_until = state.baseline.hold_until
    row.degradation_started_at = state.baseline.degradation_started_at
    row.chart_z = state.chart.z
    row.chart_t = state.chart.t
    row.chart_window_end = state.chart.last_window_end
    row.pending_since = state.pending_since
    row.updated_at = now


def silent_drift(session: Session, *, project_id: int) -> dict[str, Any]:
    """FM-6's label: embedding drift while the error-rate monitors (FM-1, FM-2) are quiet.

    The mission's "silent degradation" is exactly this case: nothing errors, the inputs or
    outputs moved. With an FM-1/FM-2 alert open the drift is loud (and likely the same
    incident), and the label says which alerts.
    """
    loud = list(
        session.scalars(
            select(Alert.id).where(
                Alert.project_id == project_id,
                Alert.failure_mode.in_(ERROR_RATE_MODES),
                Alert.state.in_(("firing", "acknowledged")),
            )
        )
    )
    return {"silent": not loud, "error_rate_alerts_open": loud}
