"""The silence monitor on stored traffic (both databases): traffic that stops, content
capture turned off while traces keep coming, a young project, a day/night cycle, recovery."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from app.ingest.events import validate_events
from app.ingest.store import write_events
from app.models import Alert, Trace
from app.monitors.defaults import DEFAULTS
from app.monitors.runner import run_monitor
from tests.app.engine_helpers import add_monitor, setup_project

T0 = datetime(2026, 3, 2, tzinfo=UTC)  # midnight: the traffic's day starts here
SPEC = next(spec for spec in DEFAULTS if spec["failure_mode"] == "SILENCE")
FIVE = timedelta(minutes=5)


def traffic(
    rng: np.random.Generator, start: datetime, hours: float, per_hour: float, *,
    agent: str = "support", night: float = 1.0, content: bool = True, prefix: str = "",
) -> list[dict[str, Any]]:  # fmt: skip
    """Poisson arrivals of derived traces; ``night``: the rate between 22:00 and 06:00."""
    events, t, end, i = [], start, start + timedelta(hours=hours), 0
    while True:
        rate = per_hour * (night if t.hour >= 22 or t.hour < 6 else 1.0)
        t += timedelta(hours=float(rng.exponential(1.0 / rate)))
        if t >= end:
            return events
        tid = f"{prefix}{agent}-{i}"
        body = {"trace_id": tid, "agent": agent, "started_at": t.isoformat(),
                "ended_at": (t + timedelta(seconds=20)).isoformat()}  # fmt: skip
        if content:
            body["input_hash"] = f"h{i % 50}"
        events.append({"id": tid, "type": "trace", "body": body})
        i += 1


def store(engine: Engine, pid: int, events: list[dict[str, Any]]) -> None:
    valid, rejected = validate_events(events)
    assert not rejected
    for lo in range(0, len(valid), 5000):
        write_events(engine, project_id=pid, events=valid[lo : lo + 5000])
    with engine.begin() as conn:  # what the derive job does, without its encoder
        conn.execute(update(Trace).where(Trace.derived_at.is_(None)).values(derived_at=T0))


def silence_monitor(engine: Engine, pid: int) -> int:
    return add_monitor(
        engine, pid, "SILENCE", selection=SPEC["selection"], interval_seconds=300,
        auto_resolve_after=SPEC["auto_resolve_after"],
    )  # fmt: skip


def run_every_5_min(engine: Engine, mid: int, start: datetime, end: datetime) -> list[Any]:
    runs, now = [], start
    while now <= end:
        runs.append(run_monitor(engine, monitor_id=mid, now=now))
        now += FIVE
    return runs


def alerts(engine: Engine) -> list[Alert]:
    with Session(engine) as s:
        return list(s.scalars(select(Alert).order_by(Alert.id)))


def test_an_agent_that_stops_alerts_within_15_minutes_and_resolves_when_it_returns(
    engine: Engine,
) -> None:
    rng = np.random.default_rng(0)
    pid = setup_project(engine)
    stop = T0 + timedelta(hours=30)
    back = stop + timedelta(hours=2)
    events = traffic(rng, T0, 30, 80) + traffic(rng, T0, 34, 40, agent="billing")
    events += traffic(rng, back, 2, 80, prefix="r")
    store(engine, pid, events)
    mid = silence_monitor(engine, pid)
    runs = run_every_5_min(engine, mid, stop - timedelta(hours=1), back + timedelta(minutes=45))
    fired = [r for r in runs if r.fired]
    assert fired and all(r.at > stop for r in fired)  # nothing before the stop
    # One day of reference at 80 traces/h: the 15-minute window must be empty (+1 min
    # grace), then the next 5-minute run.
    assert fired[0].at - stop <= timedelta(minutes=20)
    said = fired[0].evidence["summary"]
    assert said.startswith("traffic from support stopped: 0 traces in the last 1"), said
    [alert] = alerts(engine)  # one per agent: billing kept sending
    assert alert.labels == {"agent": "support"}
    assert alert.summary.startswith("Traffic from support ") and "billing" not in alert.summary
    assert alert.state == "resolved" and alert.resolved_at is not None
    assert alert.resolved_at - back <= timedelta(minutes=30)


def test_content_capture_turned_off_while_traces_keep_coming_alerts_within_an_hour(
    engine: Engine,
) -> None:
    rng = np.random.default_rng(1)
    pid = setup_project(engine)
    off = T0 + timedelta(hours=30)
    store(engine, pid, traffic(rng, T0, 30, 80) + traffic(rng, off, 2, 80, content=False,
                                                         prefix="off"))  # fmt: skip
    mid = silence_monitor(engine, pid)
    runs = run_every_5_min(engine, mid, off - timedelta(minutes=30), off + timedelta(hours=1))
    fired = [r for r in runs if r.fired]
    assert fired and fired[0].at > off and fired[0].at - off <= timedelta(hours=1)
    [alert] = alerts(engine)
    assert alert.summary.startswith("Captured content from support "), alert.summary
    assert "(100% usually)" in alert.summary
    assert "Traffic" not in alert.summary


@pytest.mark.slow
def test_a_day_night_cycle_raises_nothing_in_a_clean_day(engine: Engine) -> None:
    rng = np.random.default_rng(2)
    pid = setup_project(engine)
    store(engine, pid, traffic(rng, T0, 48, 80, night=0.3))
    mid = silence_monitor(engine, pid)
    runs = run_every_5_min(engine, mid, T0 + timedelta(hours=24), T0 + timedelta(hours=47))
    assert all(r.status == "ok" for r in runs)
    assert not [r.at for r in runs if r.fired]


def test_a_young_project_alerts_on_a_stop_but_not_on_its_first_night(engine: Engine) -> None:
    rng = np.random.default_rng(3)
    pid = setup_project(engine)
    start = T0 + timedelta(hours=18)  # first trace at 18:00; night from 22:00
    store(engine, pid, traffic(rng, start, 6, 80, night=0.3))
    mid = silence_monitor(engine, pid)
    early = run_monitor(engine, monitor_id=mid, now=start + timedelta(hours=1))
    assert early is not None and early.status == "insufficient_data"  # 1.5 h first
    runs = run_every_5_min(engine, mid, start + timedelta(hours=2), start + timedelta(hours=6))
    assert not [r.at for r in runs if r.fired]  # the night is no stop
    stopped_at = start + timedelta(hours=6)
    late = run_every_5_min(engine, mid, stopped_at, stopped_at + timedelta(hours=1))
    fired = [r for r in late if r.fired]
    assert fired and fired[0].at - stopped_at <= timedelta(hours=1)
    assert "the hours before" in alerts(engine)[0].summary


def test_a_derive_job_that_falls_behind_alerts(engine: Engine) -> None:
    """Traces settled for over 15 minutes and still not derived: the derive job is behind."""
    from app.models.base import utcnow

    pid = setup_project(engine)
    now = utcnow()
    events = traffic(np.random.default_rng(4), now - timedelta(hours=2), 1.9, 80)
    valid, _ = validate_events(events)
    write_events(engine, project_id=pid, events=valid)  # arrived now: not behind yet
    mid = silence_monitor(engine, pid)
    assert not run_monitor(engine, monitor_id=mid, now=now).fired
    with engine.begin() as conn:  # as if they had arrived 20 minutes ago, never derived
        conn.execute(update(Trace).values(updated_at=now - timedelta(minutes=20)))
    run = run_monitor(engine, monitor_id=mid, now=now)
    assert run is not None and run.fired
    assert "the derive job is behind: " in run.evidence["summary"]
    assert "the oldest for 19 min" in run.evidence["summary"]


def test_each_agent_that_stops_has_its_own_alert(engine: Engine) -> None:
    rng = np.random.default_rng(5)
    pid = setup_project(engine)
    stop = T0 + timedelta(hours=30)
    events = traffic(rng, T0, 30, 80) + traffic(rng, T0, 30, 80, agent="billing")
    events += traffic(rng, stop + timedelta(minutes=40), 1, 80, prefix="r")  # support returns
    store(engine, pid, events)
    mid = silence_monitor(engine, pid)
    run_every_5_min(engine, mid, stop, stop + timedelta(minutes=90))
    by_agent = {a.labels["agent"]: a for a in alerts(engine)}
    assert set(by_agent) == {"support", "billing"}
    assert by_agent["support"].state == "resolved"  # its traffic came back
    assert by_agent["billing"].state == "firing"
    assert by_agent["billing"].summary.startswith("Traffic from billing stopped")
