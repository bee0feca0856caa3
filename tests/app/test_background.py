"""Background services: a service that fails to start or stop is logged and left out."""

from __future__ import annotations

import logging

import pytest

from app.background import start_services, stop_services


class Recorder:
    def __init__(self, name: str, calls: list[str], *, fail: str = "") -> None:
        self.name, self.calls, self.fail = name, calls, fail

    def start(self) -> None:
        if self.fail == "start":
            raise RuntimeError("cannot start")
        self.calls.append(f"start {self.name}")

    def stop(self) -> None:
        if self.fail == "stop":
            raise RuntimeError("cannot stop")
        self.calls.append(f"stop {self.name}")


def test_failures_are_logged_and_the_others_carry_on(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []
    a = Recorder("a", calls)
    broken = Recorder("broken", calls, fail="start")
    stuck = Recorder("stuck", calls, fail="stop")
    c = Recorder("c", calls)
    with caplog.at_level(logging.ERROR, logger="telltale.background"):
        started = start_services([a, broken, stuck, c])
        assert started == [a, stuck, c]
        stop_services(started)
    assert calls == ["start a", "start stuck", "start c", "stop c", "stop a"]
    assert [r.getMessage() for r in caplog.records] == [
        "background service broken failed to start",
        "background service stuck failed to stop",
    ]
