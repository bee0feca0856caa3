"""Shared set-up for the engine tests: a project, monitors, channels, scripted detectors."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, select, update

from app.alerts.outbound import OutboundPolicy
from app.alerts.outbox import OUTBOX_BACKOFF, DeliveryPolicy, OutboxSender
from app.alerts.schemas import ChannelCreate
from app.alerts.store import create_channel
from app.db import write_session
from app.keys import get_or_create_project
from app.models import Monitor, Notification
from app.monitors.schemas import MonitorCreate
from app.monitors.store import create_monitor
from app.retry import Backoff
from detectors.records import DetectorResult

RETRY_FIELDS = tuple(f.name for f in fields(Backoff))

T0 = datetime(2025, 3, 3, 12, 0, tzinfo=UTC)
# The receivers of these tests listen on loopback, which production refuses by default.
LOCAL_ALLOW = ["127.0.0.1/32"]
LOCAL = OutboundPolicy.from_allow(LOCAL_ALLOW)


class Clock:
    """An injectable clock that tests move by hand."""

    def __init__(self, now: datetime | None = None) -> None:
        # Real "now" by default: API routes stamp transitions with the wall clock.
        self.now = now or datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


class Scripted:
    """A detector that returns the next scripted outcome: "fire", "clean", "few", "raise"."""

    needs: tuple[str, ...] = ()  # reads nothing: trace windows without embeddings

    def __init__(self, outcomes: Iterator[str], mode: str) -> None:
        self.outcomes = outcomes
        self.mode = mode

    def test(self, reference: Any, current: Any, *, now: float | None = None) -> DetectorResult:
        outcome = next(self.outcomes)
        if outcome == "raise":
            raise RuntimeError("scripted detector failure")
        if outcome == "slow":
            import time

            time.sleep(2.0)
        if outcome == "few":
            return DetectorResult.insufficient(self.mode, "too few traces")
        fired = outcome == "fire"
        return DetectorResult(self.mode, 3.0 if fired else 0.5, 1.0, 0.001 if fired else 0.4,
                              fired, {"lift": 3.0 if fired else 0.5})  # fmt: skip


def scripted_factory(script: Mapping[str, list[str]]) -> Any:
    iters = {mode: iter(outcomes) for mode, outcomes in script.items()}

    def factory(mode: str, params: Mapping[str, Any]) -> Scripted:
        return Scripted(iters[mode], mode)

    return factory


def ingest(engine: Engine, project_id: int, events: list[dict[str, Any]]) -> None:
    """Native ingest events through the ingest path (validate, then write); all must pass."""
    from app.ingest.events import validate_events
    from app.ingest.store import write_events

    valid, rejected = validate_events(events)
    assert not rejected, rejected
    write_events(engine, project_id=project_id, events=valid)


def setup_project(engine: Engine, name: str = "p1") -> int:
    with write_session(engine) as s:
        return get_or_create_project(s, name=name).id


def add_monitor(engine: Engine, project_id: int, mode: str = "FM-2", **kw: Any) -> int:
    body = MonitorCreate.model_validate(
        {"name": kw.pop("name", f"{mode} monitor"), "failure_mode": mode, **kw}
    )
    with write_session(engine) as s:
        return create_monitor(s, project_id=project_id, body=body).id


def store_interval(engine: Engine, monitor_id: int, seconds: int) -> None:
    """Store an interval as is, below the API's floor too (as rows from before it were)."""
    with write_session(engine) as s:
        s.execute(update(Monitor).where(Monitor.id == monitor_id).values(interval_seconds=seconds))


def add_channel(
    engine: Engine, project_id: int, *, outbound: OutboundPolicy = LOCAL, **kw: Any
) -> int:
    # Each event at once unless a test asks for grouping: the engine tests count one
    # notification per event (grouping: tests/app/alerts/test_grouping.py).
    kw.setdefault("group_wait_seconds", 0)
    kw.setdefault("group_interval_seconds", 0)
    with write_session(engine) as s:
        body = ChannelCreate(**kw)
        return create_channel(s, project_id=project_id, body=body, outbound=outbound).id


def sender(
    engine: Engine, clock: Clock, *, outbound: OutboundPolicy = LOCAL, **policy: Any
) -> OutboxSender:
    given = {"backoff_base_s": 10.0, "backoff_max_s": 600.0, "claim_lease_s": 60.0, **policy}
    retry = {k: given.pop(k) for k in RETRY_FIELDS if k in given}
    return OutboxSender(
        engine,
        policy=DeliveryPolicy(retry=replace(OUTBOX_BACKOFF, **retry), **given),
        clock=clock,
        seed=0,
        outbound=outbound,
    )


def notifications(engine: Engine) -> list[Notification]:
    with write_session(engine) as s:
        return list(s.scalars(select(Notification).order_by(Notification.id)))
