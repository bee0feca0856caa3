"""Outbox delivery: backoff, Retry-After, permanent 4xx, and restarts (kill -9)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from app.alerts.signing import sign, verify
from app.monitors.runner import run_monitor
from tests.app.engine_helpers import (
    Clock,
    add_channel,
    add_monitor,
    notifications,
    scripted_factory,
    sender,
    setup_project,
)
from tests.app.receivers import Receiver
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[3]


def _fire(engine: Engine, url: str, clock: Clock, secret: str | None = "k") -> None:
    pid = setup_project(engine)
    add_channel(engine, pid, type="webhook", url=url, secret=secret)
    mid = add_monitor(engine, pid, "FM-2")
    run_monitor(
        engine, monitor_id=mid, now=clock.now, detector_factory=scripted_factory({"FM-2": ["fire"]})
    )


def test_fails_three_times_then_delivers_when_backoff_allows(engine: Engine) -> None:
    clock = Clock()
    with Receiver() as rx:
        rx.fail(3, 503)
        _fire(engine, rx.url, clock)
        out = sender(engine, clock, backoff_base_s=10.0, jitter=0.5)
        assert out.deliver_due() == 1  # attempt 1 fails
        for attempt in (2, 3, 4):
            [n] = notifications(engine)
            wait = (n.next_attempt_at - clock.now).total_seconds()
            base = 10.0 * 2 ** (attempt - 2)
            assert base * 0.5 <= wait <= base + 1e-6  # exponential with equal jitter
            clock.advance(wait - 0.5)
            assert out.deliver_due() == 0  # not yet
            clock.advance(0.5)
            assert out.deliver_due() == 1
        [n] = notifications(engine)
        assert (n.status, n.attempts, n.last_error) == ("sent", 4, None)
        assert [r.status for r in rx.requests] == [503, 503, 503, 200]
        assert len(rx.delivered()) == 1
        body = rx.delivered()[0]
        assert verify("k", body.body, body.headers["X-Telltale-Signature"])
        assert body.headers["X-Telltale-Signature"] == sign("k", body.body)
        assert not verify("other", body.body, body.headers["X-Telltale-Signature"])


def test_retry_after_honoured_and_4xx_permanent(engine: Engine) -> None:
    clock = Clock()
    with Receiver() as rx:
        rx.fail(1, 429, {"Retry-After": "120"})
        rx.fail(1, 408)
        _fire(engine, rx.url, clock)
        out = sender(engine, clock, backoff_base_s=1.0)
        out.deliver_due()
        [n] = notifications(engine)
        assert n.status == "pending" and (n.next_attempt_at - clock.now).total_seconds() == 120
        clock.advance(119)
        assert out.deliver_due() == 0
        clock.advance(1)
        out.deliver_due()  # 408: retried too
        [n] = notifications(engine)
        assert n.status == "pending" and n.attempts == 2
        rx.fail(1, 400)
        clock.advance(10)
        out.deliver_due()
        [n] = notifications(engine)
        assert n.status == "dead" and "HTTP 400" in (n.last_error or "")
        clock.advance(3600)
        assert out.deliver_due() == 0
        assert rx.delivered() == []


def test_gives_up_after_max_attempts(engine: Engine) -> None:
    clock = Clock()
    _fire(engine, f"http://127.0.0.1:{free_port()}/down", clock)  # nothing listens
    out = sender(engine, clock, backoff_base_s=1.0, backoff_max_s=1.0, max_attempts=3)
    for _ in range(3):
        out.deliver_due()
        clock.advance(2)
    [n] = notifications(engine)
    assert (n.status, n.attempts) == ("dead", 3) and "ConnectError" in (n.last_error or "")


@pytest.fixture
def scheduler_proc(db_url: str) -> Iterator[object]:
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "TELLTALE_DATABASE_URL": db_url,
            "TELLTALE_OUTBOUND_ALLOW": "127.0.0.1/32",
        }
        cmd = [sys.executable, "-m", "app", "scheduler", "--no-monitors", "--outbox-poll", "0.1",
               "--backoff-base", "0.3", "--backoff-max", "0.3", "--claim-lease", "2"]  # fmt: skip
        p = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)
        if p.stderr:
            p.stderr.close()


def _wait(cond: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.mark.slow
def test_receiver_down_while_sender_killed_still_delivers(
    engine: Engine, scheduler_proc: object
) -> None:
    port = free_port()
    rx = Receiver(port=port)  # not listening yet: the receiver is down
    _fire(engine, rx.url + "/hook", Clock())
    first = scheduler_proc()  # type: ignore[operator]
    _wait(lambda: notifications(engine)[0].attempts >= 1)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    [n] = notifications(engine)
    assert n.status == "pending"
    with rx:
        time.sleep(0.5)
        assert rx.requests == []  # nobody is sending while the process is dead
        second = scheduler_proc()  # type: ignore[operator]
        rx.wait_for(1, timeout=30)
        _wait(lambda: notifications(engine)[0].status == "sent")
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=20) == 0  # clean shutdown
    assert len(rx.delivered()) == 1
    assert rx.delivered()[0].json()["event"] == "trigger"
