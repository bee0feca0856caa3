"""What the demo prints: every link answers, and no line runs past a terminal's width."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from app.demo.summary import banner
from app.main import create_app
from app.settings import Settings


def test_every_link_in_the_banner_is_served(tmp_path):
    base = "http://testserver"
    lines = banner(
        base_url=base, db_url="sqlite:///x.db", keys={"admin": "tt_x"}, reused=False, hint=True
    )
    urls = sorted({u.rstrip(").,") for u in re.findall(rf"{base}\S*", "\n".join(lines))})
    app = create_app(
        Settings(database_url=f"sqlite:///{tmp_path / 'x.db'}", scheduler_enabled=False),
        start_background=False,
    )
    with TestClient(app) as client:
        for url in urls:
            r = client.get(url, follow_redirects=False)
            assert r.status_code != 404, url


def test_what_the_demo_prints_fits_a_terminal():
    from datetime import UTC, datetime

    from app.demo.replay import Detection, ReplayResult, Schedule
    from app.demo.summary import Outcome, schedule_lines, summary_lines

    schedule = Schedule(start=datetime(2026, 11, 29, tzinfo=UTC), hours=27)
    result = ReplayResult(
        detections={m: Detection(m, schedule.injected_at(m)) for m in schedule.modes},
        false_alarms=[("FM-1", schedule.start), ("FM-3", schedule.start)],
        # What a 27-hour demo reports: OUTCOME sees every mode's change, dozens of times.
        cross_mode=[("FM-6", "FM-5", schedule.end)] * 5
        + [("OUTCOME", m, schedule.end) for m in schedule.modes for _ in range(29)],
        events_accepted=123_456, events_duplicate=12, runs=378, completed=True, wall_s=143,
    )  # fmt: skip
    outcome = Outcome(
        alerts_by_state={"firing": 7, "resolved": 2},
        queues={"support-answers": (30, 30), "vlm-images": (120, 120)},
        delivered=11, rejected_deliveries=1,
        delivered_by_event={"alert.firing": 9, "alert.resolved": 2, "alert.repeat": 3},
    )  # fmt: skip
    keys = {"admin": "tt_" + "x" * 43, "ingest": "tt_" + "y" * 43}
    lines = [
        *banner(base_url="http://127.0.0.1:8000", db_url="sqlite:///./telltale-demo.db",
                keys=keys, reused=True, hint=True),
        *schedule_lines(schedule, speed=900, tick_min=30),
        *summary_lines(schedule, result, outcome),
    ]  # fmt: skip
    too_long = [line for line in lines if len(line) > 90]
    assert not too_long
