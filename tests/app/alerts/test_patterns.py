"""Silence patterns: RE2 (linear time), checked at creation, and the alert path never hangs."""

from __future__ import annotations

import threading
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from app.alerts.announce import matches
from app.db import write_session
from app.models import Alert
from app.models.base import utcnow
from app.monitors.runner import run_monitor
from tests.app.engine_helpers import add_monitor, scripted_factory, setup_project
from tests.conftest import auth

# 22 nested-quantifier groups: Python's backtracking ``re`` needs hours on a 40-char label.
CATASTROPHIC = "(.*)" * 22 + "X"


def _finishes(fn: Any, timeout_s: float) -> bool:
    done = threading.Event()

    def run() -> None:
        fn()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done.wait(timeout_s)


def test_catastrophic_pattern_is_matched_in_linear_time() -> None:
    silence = [{"name": "team", "op": "=~", "value": CATASTROPHIC}]
    assert _finishes(lambda: matches(silence, {"team": "a" * 40}), timeout_s=10)
    assert not matches(silence, {"team": "a" * 40})
    assert matches(silence, {"team": "abcX"})
    assert matches([{"name": "team", "op": "!~", "value": CATASTROPHIC}], {"team": "a" * 40})


def test_patterns_re2_refuses_are_rejected_at_creation(client: TestClient, make_key: Any) -> None:
    key = make_key(role="annotate")
    for pattern in ("(?=ml)x", r"(a)\1", "(?<!x)y"):
        r = client.post(
            "/api/v1/silences",
            headers=auth(key),
            json={
                "matchers": [{"name": "team", "op": "=~", "value": pattern}],
                "duration_seconds": 60,
            },
        )
        assert r.status_code == 422, (pattern, r.text)
        assert "value" in r.json()["detail"] and "RE2" in r.json()["detail"]


def test_a_catastrophic_silence_does_not_freeze_the_alert_path(
    engine: Engine, client: TestClient, make_key: Any
) -> None:
    key = make_key(role="annotate", project="p1")
    pid = setup_project(engine, "p1")
    mid = add_monitor(engine, pid, "FM-2", labels={"team": "a" * 40})
    r = client.post(
        "/api/v1/silences",
        headers=auth(key),
        json={
            "matchers": [{"name": "team", "op": "=~", "value": CATASTROPHIC}],
            "duration_seconds": 600,
        },
    )
    assert r.status_code == 201, r.text
    factory = scripted_factory({"FM-2": ["fire"]})
    run = lambda: run_monitor(engine, monitor_id=mid, now=utcnow(), detector_factory=factory)  # noqa: E731
    assert _finishes(run, timeout_s=30), "firing an alert hung on the silence's pattern"
    assert client.get("/healthz").status_code == 200
    with write_session(engine) as s:
        [alert] = s.scalars(select(Alert))
        assert alert.state == "firing" and not alert.silenced
