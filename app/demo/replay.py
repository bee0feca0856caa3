"""Replay a scenario at accelerated time through the public API, and attribute detections.

A simulated clock drives everything: every ``tick`` of simulated time the events whose own
timestamp (trace/span start, score or embedding creation) falls in that slice are posted to
``/api/v1/ingest`` with the ingest key, in time order, so delayed labels arrive when they
would have; then each monitor is run with ``POST /api/v1/monitors/{id}/run {"now": t}``,
the real runner on the stored data. Real time is paced so that one real second covers
``speed`` simulated seconds (or less, when the monitors take longer than that).

Attribution: the modes are switched on one after another and stay on (switching a mode
off would be a second change the detectors rightly see). A monitor's baseline is frozen
while its alert is open (:mod:`app.monitors.decision.baseline`), so once FM-k's monitor has fired
after ``at_k`` its alert stays open as long as the mode is on: a firing of FM-k's monitor
after ``at_k`` is FM-k's detection (the first) or the same alert still firing; a firing
before it is reported as a false alarm, never as a detection.

FM-6 watches several streams, and one other injection rightly moves some of them: FM-5
sends production traffic to intents the eval set does not cover, which moves the agents'
``<agent>.input`` text streams (:mod:`pipelines.scenarios.injections`). So an FM-6 firing
is judged by the streams that fired (its evidence): the image stream is FM-6's own change,
input streams after FM-5's injection are FM-5's change seen by FM-6 (reported as such, not
as a false alarm and not as FM-6's detection), anything else is a false alarm.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import httpx

from app.demo.transcripts import add_words
from pipelines.scenarios import FAILURE_MODES, Injection, generate_workload
from pipelines.scenarios.convert import epoch

BATCH = 2000
# Which injection moves which of FM-6's streams (a name, or a suffix after "*").
FM6_STREAMS_MOVED_BY = {"FM-6": ("vlm.image",), "FM-5": ("*.input",)}
OUTCOME = "OUTCOME"


def fired_streams(evidence: dict[str, Any]) -> list[str]:
    """The streams an FM-6 run fired on; its most drifted stream when none fired alone
    (the sequential chart opened it)."""
    streams = evidence.get("streams") or {}
    fired = [name for name, s in streams.items() if isinstance(s, dict) and s.get("fired")]
    most = evidence.get("most_drifted_stream")
    return fired or ([most] if isinstance(most, str) else [])


def _moves(patterns: tuple[str, ...], stream: str) -> bool:
    return any(stream.endswith(p[1:]) if p.startswith("*") else stream == p for p in patterns)


@dataclass(frozen=True)
class Schedule:
    """A clean baseline, then each mode in turn gets a slot of ``(hours - baseline) / 7``."""

    start: datetime
    hours: float
    # The defaults' first verdict needs 8 h of data (a whole reference window).
    baseline_h: float = 8.0
    strength: str = "strong"
    modes: tuple[str, ...] = tuple(FAILURE_MODES)

    def __post_init__(self) -> None:
        unknown = [m for m in self.modes if m not in FAILURE_MODES]
        if not self.modes or unknown or len(set(self.modes)) != len(self.modes):
            raise ValueError(f"--modes must name distinct modes among {', '.join(FAILURE_MODES)}")
        if self.slot < timedelta(hours=2):
            raise ValueError(
                f"--hours {self.hours:g} leaves under 2 simulated hours per mode; "
                f"use at least {self.baseline_h + 2 * len(self.modes):g}"
            )

    @property
    def slot(self) -> timedelta:
        return timedelta(hours=(self.hours - self.baseline_h) / len(self.modes))

    @property
    def end(self) -> datetime:
        return self.start + timedelta(hours=self.hours)

    def injected_at(self, mode: str) -> datetime:
        k = self.modes.index(mode)
        return self.start + timedelta(hours=self.baseline_h) + k * self.slot

    def injections(self) -> list[Injection]:
        return [Injection(m, self.injected_at(m), self.strength) for m in self.modes]

    def attributable(self, mode: str, t: datetime) -> bool:
        """Whether a firing of ``mode``'s monitor at ``t`` can be this injection's doing."""
        if mode not in self.modes:
            return False
        return self.injected_at(mode) < t

    def causes(self, mode: str, t: datetime, evidence: dict[str, Any]) -> list[str]:
        """The injected modes that explain a firing of ``mode``'s monitor at ``t``."""
        if mode == OUTCOME:
            # The outcomes monitor watches what every injection ends in (success, errors,
            # latency): any injection already on explains it.
            return [m for m in self.modes if self.attributable(m, t)]
        streams = fired_streams(evidence) if mode == "FM-6" else []
        if not streams:
            return [mode] if self.attributable(mode, t) else []
        return [
            cause
            for cause, patterns in FM6_STREAMS_MOVED_BY.items()
            if self.attributable(cause, t) and any(_moves(patterns, s) for s in streams)
        ]


@dataclass
class Detection:
    mode: str
    injected_at: datetime
    detected_at: datetime | None = None
    alert_id: int | None = None
    p_value: float | None = None

    @property
    def delay(self) -> timedelta | None:
        return None if self.detected_at is None else self.detected_at - self.injected_at


@dataclass
class ReplayResult:
    detections: dict[str, Detection]
    false_alarms: list[tuple[str, datetime]] = field(default_factory=list)
    # (monitor's mode, the other injected mode whose change it saw, when)
    cross_mode: list[tuple[str, str, datetime]] = field(default_factory=list)
    events_accepted: int = 0
    events_duplicate: int = 0
    runs: int = 0
    failed_runs: int = 0
    completed: bool = False
    wall_s: float = 0.0


@dataclass(frozen=True)
class Workload:
    traces_per_hour: float = 100.0
    embedding_dim: int = 32  # the detection bench's dim: at 16 cosine drift misses more
    eval_per_agent_hour: int = 20
    images_per_hour: float = 60.0


def time_ordered(events: list[dict[str, Any]]) -> tuple[list[float], list[dict[str, Any]]]:
    """Events sorted by their own time (stable, so a trace precedes its first span)."""

    def at(e: dict[str, Any]) -> float:
        body = e["body"]
        return epoch(body.get("started_at") or body["created_at"])

    keyed = sorted(((at(e), i) for i, e in enumerate(events)))
    return [t for t, _ in keyed], [events[i] for _, i in keyed]


class Replay:
    def __init__(
        self,
        client: httpx.Client,
        *,
        schedule: Schedule,
        seed: int,
        workload: Workload,
        ingest_key: str,
        admin_key: str,
        monitors: Sequence[tuple[int, str]],
        speed: float,
        tick: timedelta,
        stop: threading.Event,
        say: Callable[[str], None],
    ) -> None:
        self.client, self.schedule, self.seed, self.workload = client, schedule, seed, workload
        self.ingest = {"Authorization": f"Bearer {ingest_key}"}
        self.admin = {"Authorization": f"Bearer {admin_key}"}
        self.monitors, self.speed, self.tick, self.stop, self.say = (
            monitors, speed, tick, stop, say
        )  # fmt: skip
        self.result = ReplayResult(
            {m: Detection(m, schedule.injected_at(m)) for m in schedule.modes}
        )

    def run(self) -> ReplayResult:
        s, w = self.schedule, self.workload
        events = generate_workload(
            self.seed, s.start, timedelta(hours=s.hours), w.traces_per_hour,
            injections=s.injections(), embedding_dim=w.embedding_dim,
            eval_per_agent_hour=w.eval_per_agent_hour, images_per_hour=w.images_per_hour,
        )  # fmt: skip
        add_words(events)  # what was asked and answered, for the labeling queue to show
        times, ordered = time_ordered(events)
        t0, now = time.monotonic(), s.start
        while now < s.end and not self.stop.is_set():
            nxt = min(now + self.tick, s.end)
            lo = bisect.bisect_left(times, now.timestamp())
            hi = bisect.bisect_left(times, nxt.timestamp())
            self._post(ordered[lo:hi])
            now = nxt
            self._run_monitors(now)
            # Pace: real seconds elapsed >= simulated seconds elapsed / speed.
            ahead = (now - s.start).total_seconds() / self.speed - (time.monotonic() - t0)
            if ahead > 0:
                self.stop.wait(ahead)
        self.result.completed = now >= s.end
        self.result.wall_s = time.monotonic() - t0
        return self.result

    def _post(self, batch: list[dict[str, Any]]) -> None:
        for i in range(0, len(batch), BATCH):
            chunk = batch[i : i + BATCH]
            while not self.stop.is_set():
                r = self.client.post("/api/v1/ingest", headers=self.ingest, json={"events": chunk})
                if r.status_code in (429, 503):  # backpressure: wait as told, then re-send
                    self.stop.wait(float(r.headers.get("Retry-After", "1")))
                    continue
                r.raise_for_status()
                body = r.json()
                if body["rejected"]:
                    raise RuntimeError(f"ingest rejected demo events: {body['rejected'][:3]}")
                self.result.events_accepted += body["accepted"]
                self.result.events_duplicate += body["duplicates"]
                break

    def _run_monitors(self, now: datetime) -> None:
        for monitor_id, mode in self.monitors:
            if self.stop.is_set():
                return
            r = self.client.post(
                f"/api/v1/monitors/{monitor_id}/run", headers=self.admin,
                json={"now": now.isoformat()},
            )  # fmt: skip
            r.raise_for_status()
            run = r.json()
            self.result.runs += 1
            self.result.failed_runs += run["status"] == "failed"
            if run["fired"]:
                self._fired(monitor_id, mode, now, run)

    def _fired(self, monitor_id: int, mode: str, now: datetime, run: dict[str, Any]) -> None:
        det = self.result.detections.get(mode)
        evidence = run.get("evidence") or {}
        causes = self.schedule.causes(mode, now, evidence)
        if det is None or mode not in causes:
            if causes:
                self._cross_mode(mode, causes, now, evidence)
                return
            self.result.false_alarms.append((mode, now))
            self.say(
                f"{mode}  {_sim(now)}  fired with no {mode} change in its windows: false alarm"
            )
            return
        if det.detected_at is not None:
            return  # the alert is already up; the runner refreshes it
        det.detected_at, det.p_value = now, run.get("p_value")
        findings = self.client.get(
            "/api/v1/findings", headers=self.admin,
            params={"monitor_id": monitor_id, "since": now.isoformat(), "limit": 1},
        ).json()["findings"]  # fmt: skip
        det.alert_id = findings[0]["alert_id"] if findings else None
        link = f"  alert {self.client.base_url}/alerts/{det.alert_id}" if det.alert_id else ""
        self.say(
            f"{mode}  {_sim(now)}  detected after {format_delay(now - det.injected_at)} "
            f"(simulated) since injection{link}"
        )

    def _cross_mode(
        self, mode: str, causes: list[str], now: datetime, evidence: dict[str, Any]
    ) -> None:
        seen = {c for m, c, _ in self.result.cross_mode if m == mode}
        self.result.cross_mode += [(mode, c, now) for c in causes]
        if set(causes) <= seen:
            return  # said once; the alert stays up while the change lasts
        if mode == OUTCOME:
            self.say(
                f"{mode}  {_sim(now)}  fired: {evidence.get('summary', '')} "
                f"(outcomes moved by {' and '.join(causes)}'s change)"
            )
            return
        streams = ", ".join(fired_streams(evidence))
        self.say(
            f"{mode}  {_sim(now)}  fired on {streams}: {' and '.join(causes)}'s change, "
            f"which moves these streams, seen by the {mode} monitor (a real drift, "
            f"not {mode}'s injection)"
        )


def _sim(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%MZ")


def format_delay(d: timedelta) -> str:
    minutes = int(round(d.total_seconds() / 60))
    return f"{minutes // 60}h{minutes % 60:02d}m"
