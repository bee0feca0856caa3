"""Outbound policy: SSRF targets refused at channel creation and at delivery, with a real
HTTP receiver on 127.0.0.1 and an injected resolver standing in for DNS."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from ipaddress import ip_address
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, update

from app.alerts.outbound import OutboundPolicy, OutboundRefused, PinnedTransport, address_refusal
from app.db import write_session
from app.main import create_app
from app.models import Channel, Notification
from app.monitors.runner import run_monitor
from app.settings import Settings
from tests.app.engine_helpers import (
    LOCAL_ALLOW,
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

REFUSED_AT_CREATION = [
    "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
    "http://127.0.0.1:5432/",
    "http://[::1]:6379/",
    "http://0x7f000001/",
    "http://2130706433/",
    "http://127.1/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://METADATA.google.internal./computeMetadata/v1/",
    "http://10.0.0.7/hook",
    "http://172.16.0.1/hook",
    "http://192.168.1.1/hook",
    "http://100.64.0.1/hook",
    "http://[fd00::1]/hook",
    "http://[fe80::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://0.0.0.0:8000/",
    "http://224.0.0.1/",
    "http://240.0.0.1/",
    "http://hooks.example/a\r\nX-Injected: 1",
    "http://hooks.example/a\nb",
    "http://hooks.example/a b",
    "http://hooks.example/\x00",
    "http://user:pass@hooks.example/",
    "http://hooks.example\\@127.0.0.1/",
    "http://hooks.example:99999/",
    "http://" + "a" * 70 + ".example/",
    "gopher://hooks.example/",
    "file:///etc/passwd",
]


class FakeDNS:
    """An injectable resolver: ``answers[host]`` is what each lookup returns, in turn."""

    def __init__(self, answers: dict[str, list[list[str]]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, int]] = []

    def __call__(self, host: str, port: int) -> Sequence[str]:
        self.calls.append((host, port))
        queue = self.answers.get(host)
        if not queue:
            raise OSError(f"no such host {host}")
        return queue.pop(0) if len(queue) > 1 else queue[0]


@pytest.fixture
def strict_client(settings: Settings) -> Iterator[TestClient]:
    """The app with the production default: no allow-list."""
    strict = settings.model_copy(update={"outbound_allow": []})
    with TestClient(create_app(strict, start_background=False)) as c:
        yield c


def test_ssrf_urls_refused_at_creation_naming_url(strict_client: TestClient, make_key: Any) -> None:
    key = make_key(role="admin")
    for url in REFUSED_AT_CREATION:
        r = strict_client.post(
            "/api/v1/channels", headers=auth(key), json={"type": "webhook", "url": url}
        )
        assert r.status_code == 422, (url, r.text)
        assert [e["field"] for e in r.json()["errors"]] == ["body.url"], (url, r.text)
    r = strict_client.get("/api/v1/channels", headers=auth(key))
    assert r.json()["channels"] == []


def test_allow_list_opens_exactly_what_it_names(client: TestClient, make_key: Any) -> None:
    key = make_key(role="admin")  # `client` allows 127.0.0.1/32, as the test settings do

    def create(url: str) -> int:
        body = {"type": "webhook", "url": url, "name": url}
        return client.post("/api/v1/channels", headers=auth(key), json=body).status_code

    assert create("http://127.0.0.1:9000/hook") == 201
    assert create("http://0x7f000001:9000/hook") == 201  # the same address, spelled in hex
    assert create("http://127.0.0.2:9000/hook") == 422
    assert create("http://[::1]:9000/hook") == 422
    assert create("http://169.254.169.254/") == 422


def test_every_resolved_address_is_checked_and_metadata_stays_refused() -> None:
    dns = FakeDNS({"mixed.example": [["93.184.215.14", "10.0.0.5"]]})
    with pytest.raises(OutboundRefused, match=r"10\.0\.0\.5, a private address"):
        OutboundPolicy(resolver=dns).check_url("https://mixed.example/hook")
    wide = OutboundPolicy.from_allow(["0.0.0.0/0", "::/0", "*.internal"], resolver=dns)
    with pytest.raises(OutboundRefused, match="metadata"):
        wide.check_url("http://169.254.169.254/")
    with pytest.raises(OutboundRefused, match="metadata"):
        wide.check_url("http://metadata.google.internal/")
    with pytest.raises(OutboundRefused, match="metadata"):
        wide.check_url("http://[::ffff:169.254.169.254]/")
    assert wide.check_url("http://10.1.2.3/").host == "10.1.2.3"
    for text in ("8.8.8.8", "2606:4700::1111"):
        assert address_refusal(ip_address(text)) is None
    for text in ("192.0.0.192", "2002:7f00:1::1", "64:ff9b::a00:1", "2001::1", "198.18.0.1"):
        assert address_refusal(ip_address(text)) is not None, text


def test_allow_list_setting_reads_commas_or_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TELLTALE_OUTBOUND_ALLOW", "10.20.0.0/16, alerts.corp.example")
    assert Settings().outbound_allow == ["10.20.0.0/16", "alerts.corp.example"]
    monkeypatch.setenv("TELLTALE_OUTBOUND_ALLOW", '["fd00::/8", "*.corp.example"]')
    assert Settings().outbound_allow == ["fd00::/8", "*.corp.example"]
    monkeypatch.setenv("TELLTALE_OUTBOUND_ALLOW", "not a host")
    with pytest.raises(ValueError, match="outbound_allow"):
        Settings()


def _fire(engine: Engine, url: str, creation: OutboundPolicy) -> None:
    pid = setup_project(engine)
    add_channel(engine, pid, type="webhook", url=url, secret="k", outbound=creation)
    mid = add_monitor(engine, pid, "FM-2")
    run_monitor(engine, monitor_id=mid, now=Clock().now,
                detector_factory=scripted_factory({"FM-2": ["fire"]}))  # fmt: skip


def test_name_resolving_private_at_delivery_is_refused_for_good(engine: Engine) -> None:
    # Public when the channel was created, private when the notification goes out.
    dns = FakeDNS({"hooks.example": [["93.184.215.14"], ["10.0.0.5"]]})
    policy = OutboundPolicy(resolver=dns)
    _fire(engine, "http://hooks.example/hook", creation=policy)
    clock = Clock()
    out = sender(engine, clock, outbound=policy)
    assert out.deliver_due() == 1
    [n] = notifications(engine)
    assert (n.status, n.attempts) == ("dead", 1)
    assert "refused: hooks.example resolves to 10.0.0.5, a private address" in (n.last_error or "")
    clock.advance(3600)
    assert out.deliver_due() == 0  # permanent: never retried


def test_delivery_connects_to_the_checked_address_only(engine: Engine) -> None:
    with Receiver() as rx:
        # Rebinding: the second lookup would answer a metadata address.
        dns = FakeDNS({"receiver.test": [["127.0.0.1"], ["169.254.169.254"]]})
        policy = OutboundPolicy.from_allow(LOCAL_ALLOW, resolver=dns)
        _fire(engine, f"http://receiver.test:{rx.port}/hook", creation=policy)
        dns.calls.clear()
        dns.answers["receiver.test"] = [["127.0.0.1"], ["169.254.169.254"]]
        sender(engine, Clock(), outbound=policy).deliver_due()
        [got] = rx.delivered()
    assert dns.calls == [("receiver.test", rx.port)]  # one lookup, and it was the one checked
    assert got.path == "/hook" and got.headers["Host"] == f"receiver.test:{rx.port}"
    assert notifications(engine)[0].status == "sent"


def test_rows_stored_before_the_checks_are_refused_at_delivery(engine: Engine) -> None:
    with Receiver() as rx:
        _fire(engine, rx.url, creation=OutboundPolicy.from_allow(LOCAL_ALLOW))
        bad = [f"http://2130706433:{rx.port}/", f"{rx.url}/a\r\nX-Injected: 1"]
        for url in bad:
            with write_session(engine) as s:
                s.execute(update(Channel).values(url=url))
                s.execute(update(Notification).values(status="pending", next_attempt_at=T0))
            sender(engine, Clock(), outbound=OutboundPolicy()).deliver_due()  # no allow-list
            [n] = notifications(engine)
            assert n.status == "dead" and (n.last_error or "").startswith("refused: "), url
        assert rx.requests == []


def test_unresolvable_name_at_delivery_is_retried(engine: Engine) -> None:
    dns = FakeDNS({"hooks.example": [["93.184.215.14"], []]})
    policy = OutboundPolicy(resolver=dns)
    _fire(engine, "http://hooks.example/hook", creation=policy)
    sender(engine, Clock(), outbound=policy).deliver_due()
    [n] = notifications(engine)
    assert n.status == "pending" and "cannot resolve hooks.example" in (n.last_error or "")


def test_redirect_is_not_followed(engine: Engine) -> None:
    with Receiver() as rx, Receiver() as elsewhere:
        rx.fail(1, 302, {"Location": f"{elsewhere.url}/stolen"})
        _fire(engine, rx.url + "/hook", creation=OutboundPolicy.from_allow(LOCAL_ALLOW))
        clock = Clock()
        out = sender(engine, clock)
        out.deliver_due()
        [n] = notifications(engine)
        assert (n.status, n.last_error) == ("dead", "HTTP 302: redirect not followed")
        clock.advance(3600)
        assert out.deliver_due() == 0
        assert [r.status for r in rx.requests] == [302]
        assert elsewhere.requests == []


def test_https_is_pinned_with_host_and_sni_of_the_name() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200)

    make: Callable[[], httpx.BaseTransport] = lambda: httpx.MockTransport(answer)  # noqa: E731
    dns = FakeDNS({"hooks.slack.com": [["34.117.0.1"]]})
    transport = PinnedTransport(OutboundPolicy(resolver=dns), make_transport=make)
    with httpx.Client(transport=transport) as http:
        assert http.post("https://hooks.slack.com/services/T/B/x", content=b"{}").status_code == 200
    [sent] = seen
    assert (sent.url.host, sent.url.path) == ("34.117.0.1", "/services/T/B/x")
    assert sent.headers["Host"] == "hooks.slack.com"
    assert sent.extensions["sni_hostname"] == "hooks.slack.com"
