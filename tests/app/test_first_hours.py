"""The first-hours guards on stored traffic (both databases): a tool broken from a project's
second hour pages within 30 minutes; a clean young project pages nothing; the guards step
aside once the calibrated monitors speak, unless their own alert is still open."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.ingest.events import validate_events
from app.ingest.store import write_events
from app.models import Alert
from app.monitors.defaults import DEFAULTS
from app.monitors.runner import run_monitor
from tests.app.engine_helpers import add_monitor, setup_project

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)
SPEC = next(spec for spec in DEFAULTS if spec["failure_mode"] == "EARLY")
TOOLS = ("search_flights", "get_reservation", "book")


def traffic(
    rng: np.random.Generator, hours: float, *, broken_from: float | None = None,
    per_hour: float = 80.0,
) -> list[dict[str, Any]]:  # fmt: skip
    """Traces of a model call and two or three tool calls; from ``broken_from`` hours,
    70% of search_flights calls fail."""
    events: list[dict[str, Any]] = []
    t, i = T0, 0
    while True:
        t += timedelta(hours=float(rng.exponential(1.0 / per_hour)))
        if t >= T0 + timedelta(hours=hours):
            return events
        tid = f"t{i}"
        broken = broken_from is not None and t >= T0 + timedelta(hours=broken_from)
        events.append({"id": tid, "type": "trace", "body": {
            "trace_id": tid, "agent": "airline", "started_at": t.isoformat(),
            "ended_at": (t + timedelta(seconds=float(rng.uniform(20, 40)))).isoformat()}})  # fmt: skip
        for k, tool in enumerate(rng.choice(TOOLS, size=int(rng.integers(2, 4)))):
            p_fail = 0.7 if broken and tool == "search_flights" else 0.05
            at = t + timedelta(seconds=5 * k + 2)
            events.append({"id": f"{tid}-{k}", "type": "span", "body": {
                "trace_id": tid, "span_id": f"s{k}", "kind": "tool", "name": str(tool),
                "tool_name": str(tool), "started_at": at.isoformat(),
                "ended_at": (at + timedelta(seconds=1)).isoformat(),
                "status": "error" if rng.random() < p_fail else "ok"}})  # fmt: skip
        i += 1


def setup(engine: Engine, events: list[dict[str, Any]]) -> int:
    pid = setup_project(engine)
    valid, rejected = validate_events(events)
    assert not rejected
    for lo in range(0, len(valid), 5000):
        write_events(engine, project_id=pid, events=valid[lo : lo + 5000])
    return add_monitor(
        engine, pid, "EARLY", selection=SPEC["selection"], interval_seconds=300,
        auto_resolve_after=SPEC["auto_resolve_after"],
    )  # fmt: skip


def runs(engine: Engine, mid: int, start_h: float, end_h: float) -> list[Any]:
    out, now = [], T0 + timedelta(hours=start_h)
    while now <= T0 + timedelta(hours=end_h):
        out.append(run_monitor(engine, monitor_id=mid, now=now))
        now += timedelta(minutes=5)
    return out


def test_a_tool_broken_from_the_second_hour_pages_within_30_minutes(engine: Engine) -> None:
    mid = setup(engine, traffic(np.random.default_rng(0), 4, broken_from=2.0))
    early = run_monitor(engine, monitor_id=mid, now=T0 + timedelta(hours=1))
    assert early is not None and early.status == "insufficient_data"
    assert "first verdict at 2026-03-02 10:30 UTC" in early.evidence["reason"]
    seen = runs(engine, mid, 1.5, 3.0)
    fired = [r for r in seen if r.fired]
    assert fired and fired[0].at > T0 + timedelta(hours=2)
    assert fired[0].at - (T0 + timedelta(hours=2)) <= timedelta(minutes=30)
    with Session(engine) as s:
        [alert] = s.scalars(select(Alert)).all()
    assert alert.summary.startswith("First-hours guard: tool search_flights failed in "), (
        alert.summary
    )
    assert "in the first hour)" in alert.summary


def test_a_clean_young_project_pages_nothing_and_the_guards_step_aside(engine: Engine) -> None:
    mid = setup(engine, traffic(np.random.default_rng(1), 10))
    seen = runs(engine, mid, 1.75, 10.0)  # the first trace came a little after T0
    assert all(r.status == "ok" for r in seen) and not [r.at for r in seen if r.fired]
    late = run_monitor(engine, monitor_id=mid, now=T0 + timedelta(hours=41))
    assert late is not None and late.status == "insufficient_data"
    assert late.evidence["reason"].startswith("stepped aside: the calibrated monitors")
