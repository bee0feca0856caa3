"""The sequential chart over run p-values catches a slow ramp that no single run is sure
of, and the alert stays open (hysteresis against the frozen baseline) until the failure
ends. Real runner and storage; a detector with an honest one-sided test of error rates."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from scipy import stats
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.ingest.events import validate_events
from app.ingest.store import write_events
from app.models import Alert, DetectorRun
from app.monitors.decision.calibration import alpha_per_run
from app.monitors.runner import run_monitor
from detectors.result import DetectorResult
from tests.app.engine_helpers import add_monitor, setup_project

T0 = datetime(2025, 3, 3, 12, tzinfo=UTC)  # the ramp starts here
RAMP_H, HOLD_H = 12, 6
SEL = {"current_window_seconds": 3600, "reference_window_seconds": 7200}


class ErrorRateTest:
    """One-sided two-proportion z-test: is the current error rate above the reference's?"""

    needs: tuple[str, ...] = ()

    def __init__(self, alpha: float) -> None:
        self.alpha = alpha

    def test(self, reference: Any, current: Any, *, now: float | None = None) -> DetectorResult:
        if len(reference) < 30 or len(current) < 30:
            return DetectorResult.insufficient("FM-2", "too few traces")
        a = sum(r.status == "error" for r in reference)
        b = sum(r.status == "error" for r in current)
        pooled = (a + b) / (len(reference) + len(current))
        se = math.sqrt(pooled * (1 - pooled) * (1 / len(reference) + 1 / len(current))) or 1.0
        z = (b / len(current) - a / len(reference)) / se
        p = float(stats.norm.sf(z))
        return DetectorResult("FM-2", z, float(stats.norm.isf(self.alpha)), p, p <= self.alpha)


def _factory(mode: str, params: Any) -> ErrorRateTest:
    return ErrorRateTest(float(params["alpha"]))


def _error_rate(h: float) -> float:
    """0.1 before the ramp, rising to 0.4 over RAMP_H hours, held HOLD_H hours, then 0.1."""
    if h < 0 or h >= RAMP_H + HOLD_H:
        return 0.1
    return 0.1 + 0.3 * min(h / RAMP_H, 1.0)


def _ingest(engine: Engine, pid: int) -> None:
    rng = np.random.default_rng(0)
    events = []
    for i in range(-12 * 180, 30 * 180):  # a trace every 20 s
        at = T0 + timedelta(seconds=20 * i)
        bad = rng.uniform() < _error_rate(i / 180)
        body = {"trace_id": f"t{i}", "agent": "a", "started_at": at.isoformat(),
                "ended_at": (at + timedelta(seconds=5)).isoformat(),
                "status": "error" if bad else "ok"}  # fmt: skip
        events.append({"id": f"e{i}", "type": "trace", "body": body})
    valid, rejected = validate_events(events)
    assert not rejected
    for k in range(0, len(valid), 5000):
        write_events(engine, project_id=pid, events=valid[k : k + 5000])


@pytest.mark.slow
def test_chart_catches_a_ramp_the_run_test_misses_and_holds_until_the_end(engine: Engine) -> None:
    pid = setup_project(engine)
    _ingest(engine, pid)
    mids = {
        seq: add_monitor(
            engine,
            pid,
            "FM-2",
            name=f"sequential={seq}",
            selection=SEL,
            interval_seconds=900,
            sequential=seq,
        )  # fmt: skip
        for seq in (False, True)
    }
    now = T0 - timedelta(hours=2)
    while now <= T0 + timedelta(hours=RAMP_H + HOLD_H + 6):
        for mid in mids.values():
            run_monitor(engine, monitor_id=mid, now=now, detector_factory=_factory)
        now += timedelta(minutes=15)
    with Session(engine) as s:
        alerts = {
            seq: list(s.scalars(select(Alert).where(Alert.monitor_id == mid)))
            for seq, mid in mids.items()
        }
        runs = list(
            s.scalars(
                select(DetectorRun)
                .where(DetectorRun.monitor_id == mids[True])
                .order_by(DetectorRun.at)
            )
        )
    # The rolling reference keeps pace with the ramp: no run is below the per-run alpha.
    assert alerts[False] == []
    [alert] = alerts[True]
    assert T0 < alert.first_fired_at <= T0 + timedelta(hours=RAMP_H)
    opening = next(r for r in runs if r.at == alert.first_fired_at)
    assert opening.evidence["opened_by"] == "sequential chart"
    # The run itself was not significant at the per-run level the ERT gives.
    assert opening.p_value is not None and opening.p_value > alpha_per_run(
        ert_days=30.0, interval_seconds=900
    )
    end = T0 + timedelta(hours=RAMP_H + HOLD_H)
    during = [r for r in runs if alert.first_fired_at <= r.at < end]
    assert alert.resolved_at is not None and end < alert.resolved_at <= end + timedelta(hours=3)
    assert all(r.at < alert.resolved_at for r in during)  # open for the whole failure
    assert any(r.evidence.get("still_degraded") for r in during)  # held open by hysteresis


def test_the_chart_only_observes_against_a_rolling_baseline() -> None:
    """Held, pinned and version baselines are one sample shared by every observation: the
    chart pauses (p = 0.01 every window would signal within a few against a rolling one)."""
    from types import SimpleNamespace

    from app.monitors import decide
    from app.monitors.decision import state as monitor_state
    from app.monitors.decision.baseline import BaselinePolicy, windows_for

    monitor: Any = SimpleNamespace(sequential=True, interval_seconds=900, for_seconds=0,
                                   expected_days_between_false_alerts=30.0)  # fmt: skip
    policy = BaselinePolicy.from_selection(SEL)

    def first_signal(mode: str) -> int | None:
        st = monitor_state.MonitorState()
        for k in range(30):
            now = T0 + timedelta(hours=k)
            w = replace(windows_for(policy, None, now), mode=mode)
            v = decide.verdict(monitor, policy, st, w,
                               DetectorResult("FM-2", 0.0, 1.0, 0.01, False), now)  # fmt: skip
            if v.fired:
                return k
            if mode != "rolling":
                assert "paused" in v.evidence["sequential"]
            st = monitor_state.MonitorState(None, v.chart)
        return None

    k = first_signal("rolling")
    assert k is not None and k < 10
    assert [first_signal(m) for m in ("held", "pinned", "version")] == [None] * 3


def test_widened_limits_keep_the_run_length_when_observations_share_a_reference() -> None:
    """The defaults' windows, simulated: a 2 h current window against a 4 h reference
    lagged 22 h, one observation per 2 h, the reflected chart as
    :func:`app.monitors.decision.sequential.update` runs it. Sharing half the reference shortens the chart's
    in-control run length below its target; the widened limits restore it."""
    from app.monitors.decision import sequential

    rng = np.random.default_rng(3)
    lam, arl0, reps, steps = sequential.LAMBDA, 100.0, 1500, 1500
    blocks = rng.normal(size=(reps, steps + 14))  # one column per 2 h of traffic
    current = blocks[:, 14:]
    reference = (blocks[:, 1:-13] + blocks[:, 2:-12]) / 2.0  # 4 h ending 22 h before
    x = (current - reference) / math.sqrt(1.5)  # standardised, as a p-value's probit is
    rho = sequential.shared_reference_correlation(
        current_seconds=7200, reference_seconds=14400, spacing_seconds=7200
    )

    def mean_run_length(inflation: float) -> float:
        L = sequential.limit_width(arl0, lam)
        z = np.zeros(reps)
        stopped = np.full(reps, steps)
        for t in range(steps):
            z = np.maximum(0.0, lam * np.maximum(x[:, t], sequential.X_MIN) + (1 - lam) * z)
            width = L * math.sqrt(inflation * lam / (2 - lam) * (1 - (1 - lam) ** (2 * t + 2)))
            hit = (z > width) & (stopped == steps)
            stopped[hit] = t + 1
        return float(stopped.mean())

    plain, widened = mean_run_length(1.0), mean_run_length(sequential.variance_inflation(rho))
    assert plain < 0.8 * arl0  # the shared reference makes the chart fire early
    assert widened >= 0.9 * arl0  # the widening gives back the target (errs long)


def test_runs_at_p_one_do_not_delay_a_later_signal() -> None:
    """The barrier at 0: a conservative test's p = 1 runs before a change leave the chart
    where a fresh one starts, so the change is signalled after as many observations."""
    from app.monitors.decision import sequential

    t0 = datetime(2025, 1, 1, tzinfo=UTC)

    def observations_to_signal(quiet: int) -> int:
        state, ps = None, [1.0] * quiet + [0.02] * 40
        for k, p in enumerate(ps):
            start = t0 + timedelta(hours=2 * k)
            state, ev = sequential.update(
                state, p_value=p, window_start=start, window_end=start + timedelta(hours=2),
                arl0=720.0,
            )  # fmt: skip
            assert state.z >= 0.0
            if ev["signal"]:
                return k + 1 - quiet
        raise AssertionError("no signal")

    fresh, after_quiet = observations_to_signal(0), observations_to_signal(30)
    assert fresh <= 4
    assert after_quiet <= fresh  # without the barrier: 6 observations, not 3
