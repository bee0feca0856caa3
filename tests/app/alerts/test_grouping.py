"""Notification groups (group_wait, group_interval) on an injected clock, both databases,
a real HTTP receiver; the waiting survives a restart because it is in the outbox."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from app.alerts import lifecycle
from app.alerts.repeats import renotify_due
from app.db import make_engine, write_session
from app.models import Alert
from app.monitors.runner import run_monitor
from tests.app.engine_helpers import (
    T0,
    Clock,
    add_channel,
    add_monitor,
    notifications,
    scripted_factory,
    sender,
    setup_project,
)
from tests.app.receivers import Receiver
from tests.conftest import auth

MODES = ("FM-1", "FM-2", "FM-3")


def _fire(engine: Engine, mid: int, clock: Clock, mode: str, outcome: str = "fire") -> None:
    run_monitor(engine, monitor_id=mid, now=clock.now,
                detector_factory=scripted_factory({mode: [outcome]}))  # fmt: skip


def _monitors(engine: Engine, pid: int, **kw: Any) -> dict[str, int]:
    return {m: add_monitor(engine, pid, m, **kw) for m in MODES}


def test_alerts_opening_together_go_out_in_one_notification(engine: Engine) -> None:
    pid = setup_project(engine)
    clock = Clock(T0)
    mids = _monitors(engine, pid)
    with Receiver() as rx:
        add_channel(engine, pid, type="webhook", url=rx.url + "/hook",
                    group_wait_seconds=30, group_interval_seconds=300)  # fmt: skip
        out = sender(engine, clock)
        _fire(engine, mids["FM-1"], clock, "FM-1")
        clock.advance(10)
        _fire(engine, mids["FM-2"], clock, "FM-2")
        assert out.deliver_due() == 0  # group_wait: nothing yet
        clock.advance(19)
        assert out.deliver_due() == 0
        clock.advance(1)  # 30 s after the first alert
        assert out.deliver_due() == 1
        [first] = rx.delivered()
        body = first.json()
        assert body["event"] == "trigger" and body["group"]["size"] == 2
        assert [a["alert"]["failure_mode"] for a in body["alerts"]] == ["FM-1", "FM-2"]
        assert "alert" not in body  # several alerts: none is "the" alert

        clock.advance(30)  # a third alert 1 min after the first: waits for group_interval
        _fire(engine, mids["FM-3"], clock, "FM-3")
        clock.advance(269)  # 299 s after the first notification (due at T0 + 30 s)
        assert out.deliver_due() == 0
        clock.advance(1)
        assert out.deliver_due() == 1
        third = rx.delivered()[1].json()
        # One alert: the single-alert fields stay as they were, and the list is there too.
        assert third["alert"]["failure_mode"] == "FM-3" and third["event"] == "trigger"
        assert [a["alert"]["id"] for a in third["alerts"]] == [third["alert"]["id"]]
        assert len({r.headers["X-Telltale-Delivery"] for r in rx.delivered()}) == 2


def test_group_wait_zero_sends_at_once(engine: Engine) -> None:
    pid = setup_project(engine)
    clock = Clock(T0)
    mids = _monitors(engine, pid)
    with Receiver() as rx:
        add_channel(engine, pid, type="webhook", url=rx.url,
                    group_wait_seconds=0, group_interval_seconds=0)  # fmt: skip
        out = sender(engine, clock)
        _fire(engine, mids["FM-1"], clock, "FM-1")
        _fire(engine, mids["FM-2"], clock, "FM-2")
        assert out.deliver_due() == 2  # today's behaviour: one notification per event
        assert [r.json()["alert"]["failure_mode"] for r in rx.delivered()] == ["FM-1", "FM-2"]


def test_resolve_and_ack_wait_for_the_group_interval(engine: Engine) -> None:
    pid = setup_project(engine)
    clock = Clock(T0)
    mid = add_monitor(engine, pid, "FM-2", auto_resolve_after=1, repeat_interval_seconds=0)
    other = add_monitor(engine, pid, "FM-1", repeat_interval_seconds=0)
    with Receiver() as rx:
        add_channel(engine, pid, type="webhook", url=rx.url,
                    group_wait_seconds=0, group_interval_seconds=300)  # fmt: skip
        out = sender(engine, clock)
        _fire(engine, mid, clock, "FM-2")
        _fire(engine, other, clock, "FM-1")
        assert out.deliver_due() == 1  # wait 0: the first at once, the second waits
        clock.advance(60)
        _fire(engine, mid, clock, "FM-2", "clean")  # auto-resolves
        with write_session(engine) as s:
            alert = s.scalars(select(Alert).where(Alert.monitor_id == other)).one()
            lifecycle.acknowledge(s, alert, actor="key:1", now=clock.now, public_url="")
        assert out.deliver_due() == 0
        clock.advance(240)
        assert out.deliver_due() == 1
        second = rx.delivered()[1].json()
        events = {a["alert"]["failure_mode"]: a["event"] for a in second["alerts"]}
        # FM-1 fired then was acknowledged before the flush: sent once, in its latest state.
        assert events == {"FM-1": "acknowledge", "FM-2": "resolve"}
        assert second["event"] == "mixed"


def test_the_wait_survives_a_restart(engine: Engine, db_url: str) -> None:
    pid = setup_project(engine)
    clock = Clock(T0)
    mids = _monitors(engine, pid)
    with Receiver() as rx:
        add_channel(engine, pid, type="alertmanager", url=rx.url,
                    group_wait_seconds=30, group_interval_seconds=300)  # fmt: skip
        first = sender(engine, clock)
        _fire(engine, mids["FM-1"], clock, "FM-1")
        _fire(engine, mids["FM-2"], clock, "FM-2")
        assert first.deliver_due() == 0
        first.close()
        [row] = notifications(engine)
        assert (row.collecting, row.due_at) == (True, clock.now.replace(second=30))
        # A new process: a new engine and sender, nothing but the database in common.
        fresh = make_engine(db_url)
        try:
            again = sender(fresh, clock)
            clock.advance(29)
            assert again.deliver_due() == 0
            clock.advance(1)
            assert again.deliver_due() == 1
            again.close()
        finally:
            fresh.dispose()
        [req] = rx.delivered()
        assert req.path == "/api/v2/alerts"
        assert sorted(a["labels"]["failure_mode"] for a in req.json()) == ["FM-1", "FM-2"]
        [row] = notifications(engine)
        assert (row.status, row.collecting) == ("sent", False)


def test_pagerduty_gets_one_event_per_alert_at_the_groups_time(engine: Engine) -> None:
    pid = setup_project(engine)
    clock = Clock(T0)
    mids = _monitors(engine, pid)
    with Receiver() as rx:
        add_channel(engine, pid, type="pagerduty", url=rx.url + "/pd", routing_key="R123",
                    group_wait_seconds=30, group_interval_seconds=300)  # fmt: skip
        add_channel(engine, pid, type="slack", url=rx.url + "/slack",
                    group_wait_seconds=30, group_interval_seconds=300)  # fmt: skip
        out = sender(engine, clock)
        _fire(engine, mids["FM-1"], clock, "FM-1")
        clock.advance(5)
        _fire(engine, mids["FM-2"], clock, "FM-2")
        clock.advance(24)
        assert out.deliver_due() == 0
        clock.advance(1)
        assert out.deliver_due() == 3
        pd = [r.json() for r in rx.delivered() if r.path == "/pd"]
        assert [(e["event_action"], e["payload"]["class"]) for e in pd] == [
            ("trigger", "FM-1"), ("trigger", "FM-2"),
        ]  # fmt: skip
        [slack] = [r.json() for r in rx.delivered() if r.path == "/slack"]
        assert slack["blocks"][0]["text"]["text"] == "2 Telltale alerts"
        assert len(slack["blocks"]) == 3 and "FM-2" in slack["text"]


def test_a_reminder_goes_through_the_group(engine: Engine) -> None:
    pid = setup_project(engine)
    clock = Clock(T0)
    mid = add_monitor(engine, pid, "FM-2", repeat_interval_seconds=600, auto_resolve_after=9)
    with Receiver() as rx:
        add_channel(engine, pid, type="webhook", url=rx.url,
                    group_wait_seconds=30, group_interval_seconds=300)  # fmt: skip
        out = sender(engine, clock)
        _fire(engine, mid, clock, "FM-2")
        clock.advance(30)
        assert out.deliver_due() == 1
        clock.advance(570)  # the repeat interval, 600 s after the alert was queued
        assert renotify_due(engine, now=clock.now) == 1
        assert out.deliver_due() == 0  # the group was quiet: the reminder waits group_wait
        rows = notifications(engine)
        assert [(n.event, (n.due_at - T0).total_seconds()) for n in rows] == [
            ("trigger", 30.0), ("trigger", 630.0),
        ]  # fmt: skip
        clock.advance(30)
        assert out.deliver_due() == 1 and len(rx.delivered()) == 2


def test_channel_timing_in_the_api(client: TestClient, make_key: Any) -> None:
    key = make_key(role="admin")
    url = "http://127.0.0.1:9/hook"
    r = client.post("/api/v1/channels", headers=auth(key), json={"type": "webhook", "url": url})
    assert r.status_code == 201
    assert (r.json()["group_wait_seconds"], r.json()["group_interval_seconds"]) == (30, 300)
    for field, value in (("group_wait_seconds", -1), ("group_interval_seconds", 86401),
                         ("group_wait_seconds", "soon")):  # fmt: skip
        r = client.post("/api/v1/channels", headers=auth(key),
                        json={"type": "webhook", "url": url, field: value})  # fmt: skip
        assert r.status_code == 422 and field in r.text
    r = client.post("/api/v1/channels", headers=auth(key), json={
        "type": "webhook", "url": url, "name": "now", "group_wait_seconds": 0,
        "group_interval_seconds": 60})  # fmt: skip
    assert r.status_code == 201 and r.json()["group_interval_seconds"] == 60
    listed = client.get("/api/v1/channels", headers=auth(key)).json()["channels"]
    assert [(c["group_wait_seconds"], c["group_interval_seconds"]) for c in listed] == [
        (30, 300), (0, 60),
    ]  # fmt: skip
