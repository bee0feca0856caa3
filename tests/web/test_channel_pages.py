"""Settings · channels: create (the API's checks), delete, and a test that a real HTTP
receiver gets through the outbox, signed like any notification."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select

from app.alerts.signing import verify
from app.db import write_session
from app.models import Channel
from tests.app.engine_helpers import Clock, sender
from tests.app.receivers import Receiver
from tests.web.test_pages import login
from tests.web.test_settings_pages import csrf, post


def test_a_channel_is_created_tested_and_deleted(client, make_key, engine):
    login(client, make_key("admin"))
    page = client.get("/settings/channels").text
    assert "No channel: alerts show on the pages only." in page
    token = csrf(page)
    with Receiver() as rx:
        r = post(client, "/settings/channels", {"type": "webhook", "url": rx.url + "/hook",
                                                 "secret": "s3cret-s3cret"}, token)  # fmt: skip
        assert r.status_code == 200 and "created; send it a test" in r.text, r.text[-2000:]
        with write_session(engine) as session:
            channel_id = session.scalar(select(Channel.id))
        r = post(client, f"/settings/channels/{channel_id}/test", {}, token)
        assert f"Test queued for channel {channel_id}" in r.text
        assert sender(engine, Clock(datetime.now(UTC))).deliver_due() == 1
        [got] = rx.delivered()
        body = got.json()
        assert body["alert"]["summary"].startswith("Test notification from Telltale")
        signature = {k.lower(): v for k, v in got.headers.items()}["x-telltale-signature"]
        assert verify("s3cret-s3cret", got.body, signature)  # signed as every notification
    r = post(client, f"/settings/channels/{channel_id}/delete", {}, token)
    assert f"Channel {channel_id} deleted." in r.text
    assert post(client, f"/settings/channels/{channel_id}/test", {}, token).status_code == 404


def test_refused_channels_name_the_field(client, make_key, engine):
    login(client, make_key("admin"))
    token = csrf(client.get("/settings/channels").text)
    for data, said in [
        ({"type": "carrier-pigeon", "url": "https://x.example"}, "type: Input should be"),
        ({"type": "webhook", "url": "not a url"}, "url"),
        ({"type": "webhook", "url": "http://10.0.0.1/hook"}, "url:"),
        ({"type": "pagerduty", "url": ""}, "routing_key"),
    ]:
        r = post(client, "/settings/channels", data, token)
        assert r.status_code == 422 and said in r.text, (data, r.status_code, r.text[-1500:])
    with write_session(engine) as session:
        assert session.scalar(select(Channel)) is None
    client.cookies.clear()
    login(client, make_key("read"))
    assert client.get("/settings/channels", headers={"accept": "text/html"}).status_code == 403
    r = post(client, "/settings/channels", {"type": "webhook", "url": "http://127.0.0.1:9/"}, token)
    assert r.status_code == 403
