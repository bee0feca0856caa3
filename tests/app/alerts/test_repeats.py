"""Reminders on a timer: a firing alert is re-notified once its repeat interval has passed,
without waiting for a fired run; acknowledged, resolved and repeat-0 alerts are not; a
silenced one is announced when its silence ends. Injected clock, both databases."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine, select

from app.alerts import lifecycle
from app.alerts.repeats import renotify_due
from app.alerts.schemas import SilenceCreate
from app.alerts.store import create_silence
from app.db import write_session
from app.models import Alert
from app.monitors.runner import run_monitor
from tests.app.engine_helpers import (
    T0,
    Clock,
    add_channel,
    add_monitor,
    notifications,
    scripted_factory,
    setup_project,
)

HOOK = "http://127.0.0.1:9/hook"  # nothing is delivered here: the outbox rows are the point


def _triggers(engine: Engine, alert_id: int) -> int:
    return sum(n.event == "trigger" and n.alert_id == alert_id for n in notifications(engine))


def _alert(engine: Engine, mid: int) -> Alert:
    with write_session(engine) as s:
        alert = s.scalars(select(Alert).where(Alert.monitor_id == mid)).one()
        s.expunge(alert)
        return alert


def test_reminder_comes_from_the_timer_not_from_a_fired_run(engine: Engine) -> None:
    pid = setup_project(engine)
    add_channel(engine, pid, type="webhook", url=HOOK)
    clock = Clock(T0)
    mid = add_monitor(engine, pid, "FM-2", repeat_interval_seconds=600, auto_resolve_after=50)
    quiet = add_monitor(engine, pid, "FM-1", repeat_interval_seconds=0)
    factory = scripted_factory({"FM-2": ["fire"] + ["clean"] * 10, "FM-1": ["fire"]})
    run_monitor(engine, monitor_id=mid, now=clock.now, detector_factory=factory)
    run_monitor(engine, monitor_id=quiet, now=clock.now, detector_factory=factory)
    alert = _alert(engine, mid)
    assert _triggers(engine, alert.id) == 1

    clock.advance(300)
    run_monitor(engine, monitor_id=mid, now=clock.now, detector_factory=factory)  # clean
    assert renotify_due(engine, now=clock.now) == 0
    clock.advance(301)  # 601 s after the first notification, no fired run since
    assert renotify_due(engine, now=clock.now) == 1
    assert _triggers(engine, alert.id) == 2
    assert renotify_due(engine, now=clock.now) == 0  # the interval restarts at the reminder
    clock.advance(3600)
    assert renotify_due(engine, now=clock.now) == 1  # the repeat-0 monitor never repeats
    assert _triggers(engine, _alert(engine, quiet).id) == 1

    with write_session(engine) as s:
        live = s.get(Alert, alert.id)
        assert live is not None
        lifecycle.acknowledge(s, live, actor="key:1", now=clock.now, public_url="")
    clock.advance(3600)
    assert renotify_due(engine, now=clock.now) == 0
    assert _triggers(engine, alert.id) == 3


def test_silenced_alert_is_announced_when_its_silence_ends(engine: Engine) -> None:
    pid = setup_project(engine)
    add_channel(engine, pid, type="webhook", url=HOOK)
    clock = Clock(T0)
    mid = add_monitor(engine, pid, "FM-2", labels={"team": "ml"}, repeat_interval_seconds=3600)
    with write_session(engine) as s:
        body = SilenceCreate.model_validate(
            {"matchers": [{"name": "team", "value": "ml"}], "duration_seconds": 900}
        )
        create_silence(s, project_id=pid, body=body, actor="key:1", now=clock.now)
    run_monitor(engine, monitor_id=mid, now=clock.now,
                detector_factory=scripted_factory({"FM-2": ["fire"]}))  # fmt: skip
    alert = _alert(engine, mid)
    assert alert.silenced and _triggers(engine, alert.id) == 0
    clock.advance(600)
    assert renotify_due(engine, now=clock.now) == 0  # still silenced
    clock.advance(600)
    assert renotify_due(engine, now=clock.now) == 1  # silence over: announced at once
    assert not _alert(engine, mid).silenced and _triggers(engine, alert.id) == 1
    assert renotify_due(engine, now=clock.now + timedelta(seconds=60)) == 0
