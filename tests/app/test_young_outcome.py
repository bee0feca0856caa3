"""OUTCOME on a young project (both databases): with an online evaluator predicting the
objective, its first verdict comes 8 h after the first trace on 2-hour windows, and a fall
in success from the ninth hour alerts that day; without one it waits for its own 24 h.
The young windows step aside once the monitor's own are due."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.evaluators import store as evaluators
from app.evaluators.spec import EvaluatorCreate
from app.ingest.events import validate_events
from app.ingest.store import write_events
from app.monitors.defaults import DEFAULTS
from app.monitors.runner import run_monitor
from app.web.health import history_needed
from tests.app.engine_helpers import add_monitor, setup_project

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)
SPEC = next(spec for spec in DEFAULTS if spec["failure_mode"] == "OUTCOME")


def traffic(
    rng: np.random.Generator, hours: float, *, fall_from: float | None = None
) -> list[dict[str, Any]]:
    """80 traces/h; success 0.45 (0.10 from ``fall_from`` hours); a judge that agrees with
    the outcome 85% of the time on every trace; a quarter of the traces labeled."""
    events: list[dict[str, Any]] = []
    t, i = T0 + timedelta(minutes=1), 0
    while t < T0 + timedelta(hours=hours):
        tid = f"t{i}"
        fell = fall_from is not None and t >= T0 + timedelta(hours=fall_from)
        y = float(rng.random() < (0.10 if fell else 0.45))
        judged = y if rng.random() < 0.85 else 1.0 - y
        end = t + timedelta(seconds=float(rng.uniform(20, 40)))
        events.append({"id": tid, "type": "trace", "body": {
            "trace_id": tid, "agent": "airline", "started_at": t.isoformat(),
            "ended_at": end.isoformat()}})  # fmt: skip
        events.append({"id": f"{tid}-s", "type": "span", "body": {
            "trace_id": tid, "span_id": "s0", "kind": "tool", "name": "search",
            "tool_name": "search", "started_at": t.isoformat(), "ended_at": end.isoformat(),
            "status": "ok"}})  # fmt: skip
        scored = (end + timedelta(minutes=2)).isoformat()
        events.append({"id": f"{tid}-j", "type": "score", "body": {
            "trace_id": tid, "name": "resolved_judge", "value": judged, "kind": "proxy",
            "created_at": scored}})  # fmt: skip
        if rng.random() < 0.25:
            events.append({"id": f"{tid}-y", "type": "score", "body": {
                "trace_id": tid, "name": "task_success", "value": y, "kind": "true", "source": "human",
                "created_at": scored}})  # fmt: skip
        t += timedelta(hours=float(rng.exponential(1.0 / 80)))
        i += 1
    return events


def setup(engine: Engine, events: list[dict[str, Any]], *, judged: bool) -> int:
    pid = setup_project(engine)
    valid, rejected = validate_events(events)
    assert not rejected
    for lo in range(0, len(valid), 5000):
        write_events(engine, project_id=pid, events=valid[lo : lo + 5000])
    if judged:
        with Session(engine) as s:
            evaluators.create(s, project_id=pid, body=EvaluatorCreate.model_validate({
                "name": "resolved-judge", "kind": "check", "score_name": "resolved_judge",
                "objective": "task_success", "check": {"check": "refusal"}}))  # fmt: skip
            s.commit()
    return add_monitor(engine, pid, "OUTCOME", selection=SPEC["selection"])


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def test_with_a_judge_the_first_verdict_comes_after_8_hours(engine: Engine) -> None:
    mid = setup(engine, traffic(np.random.default_rng(0), 10), judged=True)
    early = run_monitor(engine, monitor_id=mid, now=at(8.0))
    assert early is not None and early.status == "insufficient_data"
    assert "the reference needs 8 h of data" in early.evidence["reason"]
    assert "first verdict at 2026-03-02 17:01 UTC" in early.evidence["reason"]
    verdict = run_monitor(engine, monitor_id=mid, now=at(8.25))
    assert verdict is not None and verdict.status == "ok" and not verdict.fired
    rows = verdict.evidence["objectives"]
    assert rows and all(r["name"] == "task_success" and r["method"] == "ppi" for r in rows)
    assert verdict.window_end - verdict.window_start == timedelta(hours=2)
    assert verdict.reference_end - verdict.reference_start == timedelta(hours=4)


def test_without_a_judge_outcome_waits_for_its_own_windows(engine: Engine) -> None:
    mid = setup(engine, traffic(np.random.default_rng(0), 10), judged=False)
    run = run_monitor(engine, monitor_id=mid, now=at(9.0))
    assert run is not None and run.status == "insufficient_data"
    assert "the reference needs 24 h of data" in run.evidence["reason"]


def test_a_fall_in_the_first_day_alerts_on_the_young_windows(engine: Engine) -> None:
    mid = setup(engine, traffic(np.random.default_rng(1), 14, fall_from=9.0), judged=True)
    fired = []
    now = at(8.25)
    while now <= at(14.0) and not fired:
        run = run_monitor(engine, monitor_id=mid, now=now)
        assert run is not None
        if run.fired:
            fired.append(run)
        elif now < at(9.0):
            assert run.status == "ok"
        now += timedelta(minutes=15)
    assert fired, "no alert in the 5 h after success fell 0.45 -> 0.10"
    assert fired[0].at - at(9.0) <= timedelta(hours=3)


def test_the_young_windows_step_aside_once_the_own_windows_are_due(engine: Engine) -> None:
    mid = setup(engine, traffic(np.random.default_rng(2), 26), judged=True)
    run = run_monitor(engine, monitor_id=mid, now=at(25.5))
    assert run is not None and run.status == "ok"
    assert run.window_end - run.window_start == timedelta(hours=8)


def test_pages_quote_8_hours_with_an_evaluator_and_24_without() -> None:
    selection = SPEC["selection"]
    assert history_needed(selection) == timedelta(hours=24)
    assert history_needed(selection, judged=True) == timedelta(hours=8)

