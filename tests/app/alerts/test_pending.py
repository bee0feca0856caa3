"""``for_seconds`` (Prometheus's ``for``): an alert opens only after runs have kept firing
that long; a clean run in between starts the wait again. Injected clock, both databases."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine, select

from app.db import write_session
from app.models import Alert, DetectorRun
from app.monitors.runner import run_monitor
from tests.app.engine_helpers import (
    T0,
    add_channel,
    add_monitor,
    notifications,
    scripted_factory,
    setup_project,
)


def test_alert_waits_for_the_condition_to_hold(engine: Engine) -> None:
    pid = setup_project(engine)
    add_channel(engine, pid, type="webhook", url="http://127.0.0.1:9/hook")
    # No sequential chart: its verdict between observations would follow the scripted "fire".
    mid = add_monitor(engine, pid, "FM-2", interval_seconds=900, for_seconds=1800,
                      selection={"current_window_seconds": 3600}, sequential=False)  # fmt: skip
    script = ["fire", "clean", "fire", "fire", "fire", "fire"]
    factory = scripted_factory({"FM-2": script})
    opened = []
    for k in range(len(script)):
        run_monitor(engine, monitor_id=mid, now=T0 + k * timedelta(seconds=900),
                    detector_factory=factory)  # fmt: skip
        with write_session(engine) as s:
            opened.append(len(s.scalars(select(Alert)).all()))
    # fire (pending) | clean (the wait restarts) | fire at 2 (pending) | 3 (900 s) | 4 opens
    assert opened == [0, 0, 0, 0, 1, 1]
    with write_session(engine) as s:
        alert = s.scalars(select(Alert)).one()
        runs = list(s.scalars(select(DetectorRun).order_by(DetectorRun.at)))
    assert alert.first_fired_at == T0 + 4 * timedelta(seconds=900)
    assert [r.evidence.get("pending") for r in runs] == [True, None, True, True, False, None]
    # Without a change-point estimate, the degradation was first seen by the first run of
    # the pending stretch (not at its window's start, hours before the change in a long one).
    held = runs[4].evidence["baseline"]
    assert held["degradation_started_at"] == (
        (T0 + 2 * timedelta(seconds=900)).isoformat().replace("+00:00", "Z")
    )
    assert held["onset"] == "first fired run"
    assert "First seen 2025-03-03 12:30 UTC" in alert.summary
    assert [n.event for n in notifications(engine)] == ["trigger"]  # nothing while pending
