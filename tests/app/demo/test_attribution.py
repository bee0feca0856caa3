"""How the demo attributes a firing: by the mode's injection time, and for FM-6 by the
streams that fired (FM-5's change moves the agents' input streams FM-6 also watches)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from app.demo.replay import Schedule, fired_streams
from app.demo.summary import Outcome, summary_lines

START = datetime(2026, 12, 2, 5, tzinfo=UTC)
SCHEDULE = Schedule(start=START, hours=27.0, baseline_h=6.0)  # FM-5 at +18 h, FM-6 at +21 h


def _fm6(**fired: bool) -> dict[str, Any]:
    streams = {name: {"fired": f, "p_value": 0.001} for name, f in fired.items()}
    return {"streams": streams, "most_drifted_stream": next(iter(fired))}


def _at(hours: float) -> datetime:
    return START + timedelta(hours=hours)


def test_fired_streams_fall_back_to_the_most_drifted_one() -> None:
    ev = _fm6(**{"support-agent.input": False, "vlm.image": True})
    assert fired_streams(ev) == ["vlm.image"]
    ev = _fm6(**{"support-agent.input": False, "vlm.image": False})
    assert fired_streams(ev) == ["support-agent.input"]  # the chart opened it
    assert fired_streams({}) == []


def test_input_streams_after_fm5_are_fm5s_change() -> None:
    inputs = _fm6(**{"research-agent.input": True, "vlm.image": False})
    assert SCHEDULE.injected_at("FM-5") == _at(18) and SCHEDULE.injected_at("FM-6") == _at(21)
    assert SCHEDULE.causes("FM-6", _at(17.5), inputs) == []  # before FM-5: false alarm
    assert SCHEDULE.causes("FM-6", _at(20), inputs) == ["FM-5"]
    assert SCHEDULE.causes("FM-6", _at(21.5), inputs) == ["FM-5"]  # not FM-6's detection


def test_the_image_stream_after_fm6_is_fm6s_detection() -> None:
    image = _fm6(**{"vlm.image": True, "support-agent.input": True})
    assert SCHEDULE.causes("FM-6", _at(20), image) == ["FM-5"]  # the image is not moved yet
    assert SCHEDULE.causes("FM-6", _at(21.5), image) == ["FM-6", "FM-5"]
    only_image = _fm6(**{"vlm.image": True})
    assert SCHEDULE.causes("FM-6", _at(12), only_image) == []


def test_other_modes_are_judged_by_their_injection_time() -> None:
    assert SCHEDULE.causes("FM-2", _at(8), {}) == []
    assert SCHEDULE.causes("FM-2", _at(10), {}) == ["FM-2"]


def test_summary_counts_cross_mode_firings_apart_from_false_alarms() -> None:
    from app.demo.replay import Detection, ReplayResult

    result = ReplayResult(
        detections={m: Detection(m, SCHEDULE.injected_at(m)) for m in SCHEDULE.modes},
        false_alarms=[("FM-1", _at(7))],
        cross_mode=[("FM-6", "FM-5", _at(20)), ("FM-6", "FM-5", _at(20.5))],
        completed=True,
    )
    outcome = Outcome(
        alerts_by_state={}, delivered=0, delivered_by_event={}, rejected_deliveries=0,
        queues={"vlm-images": (0, 0)},
    )  # fmt: skip
    text = "\n".join(summary_lines(SCHEDULE, result, outcome))
    assert "false alarms: FM-1 x1\n" in text and "    FM-6 saw FM-5 x2" in text
