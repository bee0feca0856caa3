"""Alert lifecycle end to end: runs -> alerts -> outbox -> real HTTP receivers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from app.alerts.announce import matches
from app.alerts.lifecycle import fingerprint
from app.alerts.signing import verify
from app.db import write_session
from app.models import Alert, AlertEvent
from app.monitors.runner import run_monitor
from tests.app.engine_helpers import (
    Clock,
    add_channel,
    add_monitor,
    scripted_factory,
    sender,
    setup_project,
)
from tests.app.receivers import Receiver
from tests.conftest import auth


def _alerts(engine: Engine) -> list[Alert]:
    with write_session(engine) as s:
        return list(s.scalars(select(Alert).order_by(Alert.id)))


def _by_path(rx: Receiver, start: int = 0) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for r in rx.delivered()[start:]:
        out.setdefault(r.path, []).append(r)
    return out


def test_dedup_ack_repeat_and_auto_resolve(
    engine: Engine, client: TestClient, make_key: Any
) -> None:
    key = make_key(role="admin", project="p1")
    pid = setup_project(engine, "p1")
    clock = Clock()
    mid = add_monitor(
        engine, pid, "FM-2", labels={"team": "ml"}, auto_resolve_after=2,
        repeat_interval_seconds=600,
    )  # fmt: skip
    script = ["fire", "fire", "fire", "fire", "few", "clean", "clean", "fire"]
    factory = scripted_factory({"FM-2": script})
    with Receiver() as rx:
        add_channel(engine, pid, type="webhook", url=rx.url + "/hook", secret="s3cret")
        add_channel(engine, pid, type="slack", url=rx.url + "/slack")
        add_channel(engine, pid, type="pagerduty", url=rx.url + "/pd", routing_key="R123")
        add_channel(engine, pid, type="alertmanager", url=rx.url)
        out = sender(engine, clock)

        def run() -> None:
            run_monitor(engine, monitor_id=mid, now=clock.now, detector_factory=factory,
                        public_url="https://tt.example")  # fmt: skip
            out.deliver_due()

        run()
        [alert] = _alerts(engine)
        assert (alert.state, alert.count) == ("firing", 1)
        assert alert.fingerprint == fingerprint(
            project_id=pid, monitor_id=mid, failure_mode="FM-2", labels={"team": "ml"}
        )
        got = _by_path(rx)
        assert sorted(got) == ["/api/v2/alerts", "/hook", "/pd", "/slack"]
        hook = got["/hook"][0]
        assert verify("s3cret", hook.body, hook.headers["X-Telltale-Signature"])
        assert hook.json()["event"] == "trigger" and hook.json()["alert"]["id"] == alert.id
        pd = got["/pd"][0].json()
        assert (pd["event_action"], pd["dedup_key"], pd["routing_key"]) == (
            "trigger", alert.fingerprint, "R123",
        )  # fmt: skip
        [am] = got["/api/v2/alerts"][0].json()
        assert am["labels"]["failure_mode"] == "FM-2" and am["labels"]["team"] == "ml"
        assert "startsAt" in am and "endsAt" not in am
        slack = got["/slack"][0].json()
        assert f"https://tt.example/alerts/{alert.id}" in str(slack["blocks"])

        clock.advance(60)
        run()  # repeat inside repeat_interval: counted, not re-notified
        assert len(rx.delivered()) == 4
        [alert] = _alerts(engine)
        assert alert.count == 2

        clock.advance(600)
        run()  # unacknowledged past repeat_interval: re-notified
        assert len(rx.delivered()) == 8

        r = client.post(f"/api/v1/alerts/{alert.id}/ack", headers=auth(key))
        assert r.status_code == 200 and r.json()["state"] == "acknowledged"
        out.deliver_due()
        acks = _by_path(rx, 8)
        assert sorted(acks) == ["/hook", "/pd", "/slack"]  # Alertmanager has no ack
        assert acks["/pd"][0].json()["event_action"] == "acknowledge"

        clock.advance(700)
        run()  # acknowledged: counted, never re-notified
        assert len(rx.delivered()) == 11
        clock.advance(60)
        run()  # insufficient data: no clean run
        [alert] = _alerts(engine)
        assert (alert.state, alert.count, alert.clean_runs) == ("acknowledged", 4, 0)
        clock.advance(60)
        run()
        clock.advance(60)
        run()  # second clean run resolves
        [alert] = _alerts(engine)
        assert alert.state == "resolved" and alert.resolved_by == "system"
        resolves = _by_path(rx, 11)
        assert resolves["/pd"][0].json()["event_action"] == "resolve"
        [am] = resolves["/api/v2/alerts"][0].json()
        assert am["endsAt"].startswith(clock.now.date().isoformat())

        clock.advance(60)
        run()  # fires again: a new episode with the same fingerprint
        alerts = _alerts(engine)
        assert [a.state for a in alerts] == ["resolved", "firing"]
        assert alerts[0].fingerprint == alerts[1].fingerprint

    detail = client.get(f"/api/v1/alerts/{alert.id}", headers=auth(key)).json()
    kinds = [(e["kind"], e["actor"]) for e in detail["events"]]
    assert ("acknowledged", "key:1") in kinds or any(
        k == "acknowledged" and a.startswith("key:") for k, a in kinds
    )
    assert ("resolved", "system") in kinds
    listed = client.get("/api/v1/alerts?state=firing", headers=auth(key)).json()["alerts"]
    assert [a["id"] for a in listed] == [alerts[1].id]


def test_silence_suppresses_notification(engine: Engine, client: TestClient, make_key: Any) -> None:
    key = make_key(role="admin", project="p1")
    pid = setup_project(engine, "p1")
    clock = Clock()
    mid = add_monitor(engine, pid, "FM-2", labels={"team": "ml"}, repeat_interval_seconds=3600)
    factory = scripted_factory({"FM-2": ["fire", "fire"]})
    r = client.post(
        "/api/v1/silences",
        headers=auth(key),
        json={"matchers": [{"name": "team", "op": "=~", "value": "m."}], "duration_seconds": 3600},
    )
    assert r.status_code == 201, r.text
    silence_id = r.json()["id"]
    with Receiver() as rx:
        add_channel(engine, pid, type="webhook", url=rx.url)
        out = sender(engine, clock)
        from app.models.base import utcnow

        run_monitor(engine, monitor_id=mid, now=utcnow(), detector_factory=factory)
        out.deliver_due()
        [alert] = _alerts(engine)
        assert alert.silenced and alert.state == "firing"
        assert rx.requests == []
        assert client.delete(f"/api/v1/silences/{silence_id}", headers=auth(key)).status_code == 204
        run_monitor(
            engine, monitor_id=mid, now=utcnow() + timedelta(seconds=1), detector_factory=factory
        )
        clock.now = utcnow() + timedelta(seconds=5)
        out.deliver_due()
        assert len(rx.delivered()) == 1  # announced once its silence ended
    with write_session(engine) as s:
        kinds = list(s.scalars(select(AlertEvent.kind).order_by(AlertEvent.id)))
    assert "silenced" in kinds


def test_silence_validation_and_matchers(client: TestClient, make_key: Any) -> None:
    key = make_key(role="admin", project="p1")
    r = client.post("/api/v1/silences", headers=auth(key),
                    json={"matchers": [{"name": "a", "op": "=~", "value": "("}], "ends_at": "2999-01-01T00:00:00Z"})  # fmt: skip
    assert r.status_code == 422 and "value" in r.json()["detail"]
    r = client.post("/api/v1/silences", headers=auth(key), json={"matchers": []})
    assert r.status_code == 422 and "matchers" in r.json()["detail"]
    labels = {"severity": "warning", "team": "ml"}
    assert matches([{"name": "severity", "op": "=~", "value": "warn.*"}], labels)
    assert not matches([{"name": "team", "op": "!=", "value": "ml"}], labels)
    assert matches([{"name": "team", "op": "!~", "value": "web|ios"}], labels)
    assert not matches([{"name": "missing", "op": "=", "value": "x"}], labels)


def test_a_silence_lasts_at_most_366_days_however_its_end_is_given(
    client: TestClient, make_key: Any
) -> None:
    key = make_key(role="admin", project="p1")
    matchers = [{"name": "failure_mode", "value": "FM-2"}]
    for times, field in [
        ({"ends_at": "9999-12-31T23:59:59Z"}, "ends_at"),
        ({"starts_at": "2001-01-01T00:00:00Z", "ends_at": "2003-01-01T00:00:00Z"}, "ends_at"),
        ({"duration_seconds": 366 * 86400 + 1}, "duration_seconds"),
        ({"starts_at": "9999-12-01T00:00:00Z", "duration_seconds": 366 * 86400}, "starts_at"),
    ]:
        r = client.post("/api/v1/silences", headers=auth(key), json={"matchers": matchers, **times})
        assert r.status_code == 422, (times, r.text)
        assert r.json()["detail"].split(":")[0].endswith(field), (times, r.text)
    r = client.post("/api/v1/silences", headers=auth(key),
                    json={"matchers": matchers, "duration_seconds": 366 * 86400})  # fmt: skip
    assert r.status_code == 201, r.text


def test_channels_api(client: TestClient, make_key: Any) -> None:
    key = make_key(role="admin", project="p1")
    r = client.post("/api/v1/channels", headers=auth(key), json={"type": "pagerduty"})
    assert r.status_code == 422 and "routing_key" in r.json()["detail"]
    r = client.post(
        "/api/v1/channels", headers=auth(key), json={"type": "webhook", "url": "ftp://x"}
    )
    assert r.status_code == 422 and "url" in r.json()["detail"]
    r = client.post(
        "/api/v1/channels",
        headers=auth(key),
        json={"type": "webhook", "url": "http://127.0.0.1:9/h", "secret": "k",
              "min_severity": "critical", "failure_modes": ["FM-6"]},
    )  # fmt: skip
    assert r.status_code == 201 and r.json()["has_secret"] and "secret" not in r.json()
    cid = r.json()["id"]
    assert [
        c["id"] for c in client.get("/api/v1/channels", headers=auth(key)).json()["channels"]
    ] == [cid]
    other = make_key(role="admin", project="p2")
    assert client.delete(f"/api/v1/channels/{cid}", headers=auth(other)).status_code == 404
    assert client.delete(f"/api/v1/channels/{cid}", headers=auth(key)).status_code == 204
    reader = make_key(role="read", project="p1")
    r = client.post(
        "/api/v1/channels", headers=auth(reader), json={"type": "slack", "url": "http://a"}
    )
    assert r.status_code == 403
