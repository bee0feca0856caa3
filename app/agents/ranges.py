"""The ranges the agent pages read: the last 24 hours, 7 days or 30 days, in whole steps.

A range ends at the end of the current step (an hour; six hours for 30 days), so the
newest traces count and each chart point is one whole step of buckets; it is a whole number
of rollup buckets, since steps are.

>>> from datetime import UTC, datetime
>>> w = window("24h", datetime(2026, 12, 5, 10, 7, tzinfo=UTC))
>>> w.end_at.isoformat(), w.steps, w.step
('2026-12-05T11:00:00+00:00', 24, 3600)
>>> window("30d", datetime(2026, 12, 5, 10, 7, tzinfo=UTC)).steps
120
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from app.db import as_utc
from app.rollups.buckets import BUCKET_SECONDS

RangeName = Literal["24h", "7d", "30d"]
RANGES: dict[str, tuple[int, int]] = {  # name: (seconds, chart step seconds)
    "24h": (86_400, 3_600),
    "7d": (7 * 86_400, 3_600),
    "30d": (30 * 86_400, 6 * 3_600),
}
DEFAULT_RANGE: RangeName = "24h"


@dataclass(frozen=True)
class Window:
    """``[start, end)`` in epoch seconds (bucket-aligned), and its chart step."""

    name: str
    start: int
    end: int
    step: int

    @property
    def steps(self) -> int:
        return (self.end - self.start) // self.step

    @property
    def start_at(self) -> datetime:
        return datetime.fromtimestamp(self.start, tz=UTC)

    @property
    def end_at(self) -> datetime:
        return datetime.fromtimestamp(self.end, tz=UTC)

    @property
    def hours(self) -> float:
        return (self.end - self.start) / 3600.0


def window(name: str, now: datetime) -> Window:
    """The range ``name`` (a key of :data:`RANGES`) ending with the step holding ``now``."""
    seconds, step = RANGES[name]
    assert step % BUCKET_SECONDS == 0
    end = (int(as_utc(now).timestamp()) // step + 1) * step
    return Window(name, end - seconds, end, step)
