"""The baseline a monitor compares against: lagged and rolling while clean, frozen while an
alert is open and held after it, pinned on request; an alert resolves only when the
current window is back within the frozen baseline. Real runner, real storage (SQLite and
PostgreSQL), a detector that compares error rates of the loaded windows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.ingest.events import validate_events
from app.ingest.store import write_events
from app.models import Alert, DetectorRun, MonitorBaseline
from app.monitors.runner import run_monitor
from detectors.result import DetectorResult
from tests.app.engine_helpers import add_monitor, setup_project

T0 = datetime(2025, 3, 3, 12, tzinfo=UTC)  # the failure starts here
FAILURE_H = 12
MINUTE = timedelta(minutes=1)


class ErrorRateStep:
    """Fires when the current window's error rate is more than 0.5 above the reference's."""

    needs: tuple[str, ...] = ()

    def test(self, reference: Any, current: Any, *, now: float | None = None) -> DetectorResult:
        if not reference or not current:
            return DetectorResult.insufficient("FM-2", "empty window")
        ref = sum(r.status == "error" for r in reference) / len(reference)
        cur = sum(r.status == "error" for r in current) / len(current)
        return DetectorResult("FM-2", cur - ref, 0.5, None, cur - ref > 0.5, {"diff": cur - ref})


def _factory(mode: str, params: Any) -> ErrorRateStep:
    return ErrorRateStep()


def _ingest(engine: Engine, pid: int) -> None:
    """A trace every 5 minutes from T0 - 12 h to T0 + 24 h, all failing in [T0, T0 + 12 h)."""
    events = []
    for i in range(-144, 288):
        at = T0 + 5 * i * MINUTE
        bad = 0 <= i < FAILURE_H * 12
        body = {
            "trace_id": f"t{i}",
            "agent": "a",
            "started_at": at.isoformat(),
            "ended_at": (at + MINUTE).isoformat(),
            "status": "error" if bad else "ok",
        }
        events.append({"id": f"e{i}", "type": "trace", "body": body})
    valid, rejected = validate_events(events)
    assert not rejected
    write_events(engine, project_id=pid, events=valid)


def _runs(engine: Engine, mid: int) -> list[DetectorRun]:
    with Session(engine) as s:
        q = select(DetectorRun).where(DetectorRun.monitor_id == mid).order_by(DetectorRun.at)
        return list(s.scalars(q))


def test_baseline_freezes_while_open_and_alert_resolves_only_on_return(engine: Engine) -> None:
    pid = setup_project(engine)
    _ingest(engine, pid)
    sel = {"current_window_seconds": 3600, "reference_window_seconds": 7200}
    mid = add_monitor(engine, pid, "FM-2", selection=sel, interval_seconds=900,
                      auto_resolve_after=2)  # fmt: skip
    now = T0 - 2 * timedelta(hours=1)
    while now <= T0 + timedelta(hours=20):
        run_monitor(engine, monitor_id=mid, now=now, detector_factory=_factory)
        now += timedelta(seconds=900)

    with Session(engine) as s:
        [alert] = s.scalars(select(Alert)).all()  # one episode for the whole failure
        base = s.get(MonitorBaseline, mid)
        assert base is not None
    runs = _runs(engine, mid)
    fired_at = alert.first_fired_at
    assert T0 < fired_at <= T0 + timedelta(hours=1)
    end = T0 + timedelta(hours=FAILURE_H)
    # Open through the whole failure, long past the 2 h reference a sliding window would
    # have filled with failing traces; resolved once the current window is clean again.
    assert alert.resolved_at is not None and end < alert.resolved_at <= end + timedelta(hours=2)
    opening = next(r for r in runs if r.at == fired_at)
    assert opening.evidence["baseline"]["degradation_started_at"] is not None
    frozen_end = opening.reference_end
    assert frozen_end == fired_at - timedelta(hours=2)  # lag: one current window
    open_runs = [r for r in runs if fired_at <= r.at <= alert.resolved_at]
    assert len(open_runs) > 40
    assert {r.reference_end for r in open_runs} == {frozen_end}
    assert all(r.evidence["baseline"]["mode"] == "frozen" for r in open_runs[1:])
    # Held at the old baseline for lag + reference = 3 h after the resolution, then rolling:
    # the first rolling reference starts where the clean current window began.
    hold_end = alert.resolved_at + timedelta(hours=3)
    held = [r for r in runs if alert.resolved_at < r.at < hold_end]
    assert held and {r.reference_end for r in held} == {frozen_end}
    rolling = [r for r in runs if r.at >= hold_end]
    assert rolling and all(r.reference_end == r.at - timedelta(hours=2) for r in rolling)
    assert rolling[0].reference_start >= alert.resolved_at - timedelta(hours=1)
    assert not any(r.fired for r in rolling)
    assert base.frozen_since is None and base.good_until == rolling[-1].reference_end


def test_before_the_failure_the_reference_rolls_and_only_over_tested_data(engine: Engine) -> None:
    pid = setup_project(engine)
    _ingest(engine, pid)
    sel = {"current_window_seconds": 3600, "reference_window_seconds": 7200,
           "baseline_lag_seconds": 0}  # fmt: skip
    mid = add_monitor(engine, pid, "FM-2", selection=sel, interval_seconds=900)
    for k in range(4):
        run_monitor(engine, monitor_id=mid, now=T0 - timedelta(hours=4 - k),
                    detector_factory=_factory)  # fmt: skip
    runs = _runs(engine, mid)
    assert [r.reference_end for r in runs] == [r.window_start for r in runs]
    assert all(r.evidence["baseline"]["mode"] == "rolling" and not r.fired for r in runs)


def test_pinned_reference_is_used_as_given(engine: Engine) -> None:
    pid = setup_project(engine)
    _ingest(engine, pid)
    lo, hi = T0 - timedelta(hours=10), T0 - timedelta(hours=6)
    sel = {"current_window_seconds": 3600, "reference_start": lo.isoformat(),
           "reference_end": hi.isoformat()}  # fmt: skip
    mid = add_monitor(engine, pid, "FM-2", selection=sel, interval_seconds=900)
    for h in (2, 13, 20):
        run_monitor(engine, monitor_id=mid, now=T0 + timedelta(hours=h), detector_factory=_factory)
    runs = _runs(engine, mid)
    assert [(r.reference_start, r.reference_end) for r in runs] == [(lo, hi)] * 3
    assert [r.fired for r in runs] == [True, False, False]
    assert runs[0].n_reference == 48


def test_a_day_lag_waits_for_the_history_and_rolls_short_until_then(engine: Engine) -> None:
    """The defaults' 22 h lag with data from T0 - 12 h: until the whole lag fits the
    reference rolls one current window behind (no ``insufficient_data`` for want of
    yesterday, and never pinned to the oldest data), then a full lag behind."""
    pid = setup_project(engine)
    _ingest(engine, pid)  # traces from T0 - 12 h to T0 + 24 h
    sel = {"current_window_seconds": 3600, "reference_window_seconds": 7200,
           "baseline_lag_seconds": 22 * 3600}  # fmt: skip
    mid = add_monitor(engine, pid, "FM-2", selection=sel, interval_seconds=900)
    # Before T0 (clean) and well after the failure (T0 + 12 h) nothing fires.
    at = [T0 - timedelta(hours=8), T0 - timedelta(hours=1), T0 + timedelta(hours=12),
          T0 + timedelta(hours=23)]  # fmt: skip
    for now in at:
        run_monitor(engine, monitor_id=mid, now=now, detector_factory=_factory)
    runs = _runs(engine, mid)
    assert [r.status for r in runs[:2]] == ["ok"] * 2 and runs[3].status == "ok"
    # With 4 h, 11 h and 24 h of data the 25 h the full lag needs do not fit: one current
    # window of lag, the reference rolling with each run.
    for r, now in zip(runs[:3], at[:3], strict=True):
        assert r.reference_end == now - timedelta(hours=2)
    # At T0 + 23 h (35 h of data) the full 22 h lag: the reference is from before T0.
    assert runs[3].reference_end == at[3] - timedelta(hours=23)
    assert runs[3].reference_end <= T0 and not runs[3].fired
