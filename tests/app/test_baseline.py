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


def test_a_young_projects_runs_give_no_verdict_until_a_whole_reference_of_data(
    client: Any, engine: Any, make_key: Any
) -> None:
    """The first verdict comes at first data + history_needed, never before (a rolling
    reference reaching before the first trace is a sliver of the first hours)."""
    from app.monitors.decision.baseline import BaselinePolicy
    from app.monitors.defaults import default_monitor_bodies
    from tests.app.test_monitors import _ingest_scenario, auth, setup_project

    h = auth(make_key(role="admin", project="young"))
    start = datetime(2025, 3, 3, tzinfo=UTC)
    _ingest_scenario(engine, setup_project(engine, "young"), "FM-2", start)
    [fm2] = [
        m
        for m in client.post("/api/v1/monitors/defaults", headers=h).json()["monitors"]
        if m["failure_mode"] == "FM-2"
    ]
    first = BaselinePolicy.from_selection(default_monitor_bodies()[1].selection.model_dump())
    at = first.first_verdict_at(start)
    early = client.post(
        f"/api/v1/monitors/{fm2['id']}/run",
        headers=h,
        json={"now": (at - timedelta(minutes=15)).isoformat()},
    ).json()
    assert early["status"] == "insufficient_data" and not early["fired"]
    assert "first verdict at 2025-03-03 08:00 UTC" in early["evidence"]["reason"]
    on_time = client.post(
        f"/api/v1/monitors/{fm2['id']}/run", headers=h, json={"now": at.isoformat()}
    ).json()
    assert on_time["status"] == "ok"


def test_an_alert_held_to_a_young_sliver_is_judged_against_the_grown_reference(
    engine: Engine,
) -> None:
    """An alert frozen on a reference reaching before the first trace (opened before runs
    refused such references) resolves once the grown rolling reference no longer supports
    it, instead of staying held to the sliver."""
    from app.models import Monitor, MonitorBaseline

    pid = setup_project(engine)
    events = []
    for i in range(0, 12 * 12):  # clean, a trace every 5 minutes for 12 h from T0
        at = T0 + 5 * i * MINUTE
        body = {"trace_id": f"c{i}", "agent": "a", "started_at": at.isoformat(),
                "ended_at": (at + MINUTE).isoformat(), "status": "ok"}  # fmt: skip
        events.append({"id": f"c{i}", "type": "trace", "body": body})
    valid, _ = validate_events(events)
    write_events(engine, project_id=pid, events=valid)
    sel = {"current_window_seconds": 3600, "reference_window_seconds": 7200}
    mid = add_monitor(engine, pid, "FM-2", selection=sel, auto_resolve_after=1)
    opened = T0 + timedelta(hours=2)
    with Session(engine) as s:  # the state such an alert left: frozen at T0 + 1 h
        s.add(MonitorBaseline(monitor_id=mid, project_id=pid, good_until=T0 + timedelta(hours=1),
                              frozen_since=opened, degradation_started_at=opened))  # fmt: skip
        monitor = s.get(Monitor, mid)
        assert monitor is not None
        s.add(Alert(project_id=pid, monitor_id=mid, fingerprint="young", failure_mode="FM-2",
                    severity="critical", labels={}, state="firing", summary="", evidence={},
                    count=1, clean_runs=0, first_fired_at=opened, last_fired_at=opened))  # fmt: skip
        s.commit()
    run = run_monitor(engine, monitor_id=mid, now=T0 + timedelta(hours=10),
                      detector_factory=_factory)  # fmt: skip
    assert run is not None and run.status == "ok"
    assert run.evidence["baseline"]["reference_start"] >= T0.isoformat().replace("+00:00", "Z")
