"""A real agent's traffic on a simulated clock, evaluated by the default monitors.

The seven default monitors (``POST /api/v1/monitors/defaults``: a 2-hour current window, a
4-hour baseline lagged by 2 hours, every 15 minutes, alpha from a 30-day false-alert
budget) need about 8 hours of traffic before their first run. The agent scripts run on a
simulated clock (``agents/simclock.py``) so a few hundred traces span those hours, and the
monitors run through the scheduler's own tick (:class:`app.scheduler.service.SchedulerService`
with a simulated ``clock``), so a run that fires goes through the alert lifecycle as it would
in production and "fires" below means an alert opened.

Every test lays out one timeline (as ``bench/alerting.py`` does for generated traffic):

* ``[T0, T0 + 8 h)``: the agent, clean; the seven monitors tick over the last
  :data:`CLEAN_TICKS` slots up to ``T0 + 8 h``: **none may fire** (the clean twin: the same
  agent at the same volume, with nothing injected);
* ``[T0 + 8 h, T0 + 10 h)``: the same agent with the failure injected; the mode's monitor
  ticks every 15 minutes to ``T0 + 10 h`` and **must open an alert**.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from app.db import make_sessionmaker, write_session
from app.models import Alert, DetectorRun, Monitor
from app.scheduler.service import SchedulerService
from app.settings import Settings
from tests.conftest import auth

T0 = datetime(2025, 3, 3, tzinfo=UTC)  # a Monday; any past time works
HOUR = timedelta(hours=1)
INTERVAL = timedelta(minutes=15)
CLEAN_H, INJECTED_H = 8.0, 2.0
CLEAN_TICKS = 3  # T0 + 7.5 h, 7.75 h, 8 h
ONSET = T0 + CLEAN_H * HOUR
END = ONSET + INJECTED_H * HOUR


def clock_env(start: datetime, hours: float, traces: int) -> dict[str, str]:
    """The agent's simulated clock: ``traces`` traces spread evenly over ``hours``."""
    return {
        "SIM_START_EPOCH": f"{start.timestamp():.3f}",
        "SIM_SECONDS_PER_TRACE": f"{hours * 3600 / traces:.3f}",
    }


@dataclass
class Telltale:
    """The live service of one test, its database and the project's default monitors."""

    url: str
    admin_key: str
    engine: Engine
    settings: Settings
    monitors: dict[str, int] = field(default_factory=dict)  # failure mode -> id

    def api(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=auth(self.admin_key), timeout=60)

    def create_defaults(self) -> None:
        with self.api() as c:
            r = c.post("/api/v1/monitors/defaults")
            assert r.status_code == 201, r.text
        self.monitors = {m["failure_mode"]: m["id"] for m in r.json()["monitors"]}

    def patch_monitor(self, mode: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.api() as c:
            r = c.patch(f"/api/v1/monitors/{self.monitors[mode]}", json=body)
            assert r.status_code == 200, r.text
            return dict(r.json())

    def put(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.api() as c:
            r = c.put(path, json=body)
            assert r.status_code == 200, r.text
            return dict(r.json())

    def post_scores(self, scores: Sequence[dict[str, Any]]) -> dict[str, Any]:
        with self.api() as c:
            r = c.post("/api/v1/scores", json={"scores": list(scores)})
            assert r.status_code == 200, r.text
            return dict(r.json())

    def post_outcomes(self, path: str, *, name: str, field: str, delay_s: float) -> int:
        """The delayed ground truth: ``field`` of each line of an agent's outcomes file as
        the true score ``name`` (source ``delayed``) by OTel trace id, created ``delay_s``
        after the trace (a ticket closes later); returns how many were stored."""
        with open(path) as f:
            lines = [json.loads(line) for line in f]
        scores = [
            {
                "otel_trace_id": o["otel_trace_id"],
                "name": name,
                "value": float(o[field]),
                "source": "delayed",
                "kind": "true",
                "created_at": o["at"] + delay_s,
            }
            for o in lines
        ]
        for i in range(0, len(scores), 500):
            answer = self.post_scores(scores[i : i + 500])
            assert answer["accepted"] == len(scores[i : i + 500]), answer
        return len(scores)

    def only(self, modes: Iterable[str]) -> None:
        """Enable the monitors of ``modes``, disable the others; the next tick runs them
        (created at the real time, their first slot lies years after the simulated one)."""
        keep = {self.monitors[m] for m in modes}
        with write_session(self.engine) as s:
            for mid in self.monitors.values():
                s.execute(
                    update(Monitor)
                    .where(Monitor.id == mid)
                    .values(enabled=mid in keep, next_run_at=None)
                )

    def tick(self, at: datetime) -> list[DetectorRun]:
        """One scheduler tick as of ``at``: every due monitor runs."""
        service = SchedulerService(
            self.settings, self.engine, make_sessionmaker(self.engine), clock=lambda: at
        )
        return service.tick()

    def ticks(self, start: datetime, end: datetime) -> list[DetectorRun]:
        runs, at = [], start
        while at <= end:
            runs += self.tick(at)
            at += INTERVAL
        return runs

    def alerts(self, mode: str) -> list[Alert]:
        with Session(self.engine) as s:
            q = select(Alert).where(Alert.monitor_id == self.monitors[mode])
            return list(s.scalars(q.order_by(Alert.first_fired_at)))

    def clean_check(self) -> list[DetectorRun]:
        """All seven monitors over the last clean slots: returns their runs, none fired."""
        self.only(self.monitors)
        runs = self.ticks(ONSET - (CLEAN_TICKS - 1) * INTERVAL, ONSET)
        assert len(runs) == len(self.monitors) * CLEAN_TICKS, [(r.failure_mode, r.at) for r in runs]
        for mode in self.monitors:
            assert not self.alerts(mode), f"{mode} opened an alert on clean traffic"
        assert not [r for r in runs if r.fired]
        return runs

    def injected_check(
        self, mode: str, *, quiet: Sequence[str] = ()
    ) -> tuple[list[DetectorRun], DetectorRun]:
        """The mode's monitor over the injected stretch, ticking until its alert opens: the
        runs and the one that opened it. The monitors of ``quiet`` run too and must not fire."""
        self.only([mode, *quiet])
        runs, at = [], ONSET + INTERVAL
        while at <= END and not self.alerts(mode):  # on-call's view: until the alert opens
            runs += self.tick(at)
            at += INTERVAL
        for other in quiet:
            assert not self.alerts(other), f"{other} fired too:\n{describe(runs)}"
        runs = [r for r in runs if r.failure_mode == mode]
        alerts = self.alerts(mode)
        assert alerts, f"{mode} opened no alert; runs:\n{describe(runs)}\n{evidence(runs[-1])}"
        first = min(alerts, key=lambda a: a.first_fired_at)
        opened = next(r for r in runs if r.fired and r.at == first.first_fired_at)
        return runs, opened


def describe(runs: Sequence[DetectorRun]) -> str:
    """One line per run: mode, time, status, statistic, threshold, p and sizes."""
    out = []
    for r in runs:
        at = (r.at.replace(tzinfo=UTC) - T0) / HOUR if r.at.tzinfo is None else (r.at - T0) / HOUR
        out.append(
            f"{r.failure_mode} T0+{at:.2f}h {r.status} fired={r.fired} stat={r.statistic} "
            f"thr={r.threshold} p={r.p_value} n_ref={r.n_reference} n_cur={r.n_current} "
            f"{r.duration_ms / 1000:.1f}s" + (f" error={r.error}" if r.error else "")
        )
    return "\n".join(out)


def evidence(run: DetectorRun, *keys: str) -> str:
    """The named evidence keys of a run, as JSON (what the tests print for the lead)."""
    ev = run.evidence or {}
    return json.dumps({k: ev.get(k) for k in keys} if keys else ev, default=str)[:3000]


def report(mode: str, clean: Sequence[DetectorRun], runs: Sequence[DetectorRun],
           opened: DetectorRun, *keys: str) -> None:  # fmt: skip
    mine = [r for r in clean if r.failure_mode == mode]
    print(f"\n{mode} clean runs:\n" + describe(mine))
    print(f"{mode} injected runs:\n" + describe(runs))
    print(
        f"{mode} alert opened by: " + describe([opened]) + "\n  evidence " + evidence(opened, *keys)
    )
