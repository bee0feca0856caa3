"""The server-drawn run chart: its value axis reads at round numbers that span the data."""

from __future__ import annotations

import math
import random
import re
from datetime import UTC, datetime, timedelta

import pytest

from app.web import run_chart


def _step_is_round(step: float) -> bool:
    k = math.floor(math.log10(step))
    return any(math.isclose(step, m * 10.0**k) for m in (1, 2, 2.5, 5, 10))


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [
        (1.2, 8.97, [0, 2, 4, 6, 8, 10]),
        (0.0, 1.0, [0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (-3.0, 12.0, [-5, 0, 5, 10, 15]),
        (0.001, 0.0042, [0.001, 0.002, 0.003, 0.004, 0.005]),
        (5.0, 5.0, [4, 4.5, 5, 5.5, 6]),  # one value: a band around it
    ],
)
def test_ticks_for_known_ranges(lo: float, hi: float, expected: list[float]) -> None:
    assert run_chart.ticks(lo, hi) == pytest.approx(expected)


def test_ticks_are_round_evenly_spaced_and_span_the_range() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        scale = 10.0 ** rng.uniform(-6, 6)
        a, b = sorted(rng.uniform(-1, 1) * scale for _ in range(2))
        axis = run_chart.ticks(a, b)
        assert 2 <= len(axis) <= 6, (a, b, axis)
        assert axis[0] <= a and axis[-1] >= b, (a, b, axis)
        steps = [y - x for x, y in zip(axis[:-1], axis[1:], strict=True)]
        step = steps[0]
        assert all(math.isclose(s, step, rel_tol=1e-6) for s in steps), (a, b, axis)
        assert _step_is_round(step), (a, b, axis)
        assert all(abs(v / step - round(v / step)) < 1e-6 for v in axis), (a, b, axis)


def test_the_chart_labels_its_axis_at_the_ticks() -> None:
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    points = [
        run_chart.RunPoint(t0 + timedelta(minutes=15 * i), s, 6.2, s > 6.2, "ok")
        for i, s in enumerate([1.2, 2.4, 6.5, 8.97])
    ]
    svg = str(run_chart.svg(points, marks=run_chart.Marks(), label="cascade lift per run"))
    labels = re.findall(r'<text class="tick"[^>]*>([^<]*)</text>', svg)
    assert labels == ["0", "2", "4", "6", "8", "10"]
    assert svg.count('class="point fired"') == 2 and svg.count('class="point"') == 2
