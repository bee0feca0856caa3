"""The rollups' time buckets: :data:`BUCKET_SECONDS` of trace start times, keyed by the
epoch second they start at.

Five minutes, measured (bench/rule_preview.py, docs/benchmarks/rules.md): a month is 8,640
buckets, so a rule's 30-day preview reads tens of thousands of rollup rows where per-minute
buckets made it five times as many, with latency sketches the bulk of the bytes; and five
minutes is the step Grafana and Datadog rules are usually evaluated at. The constant lives
with the rules' library (:mod:`detectors.rules.spec`), which steps its windows by it.

>>> from datetime import UTC, datetime
>>> bucket_of(datetime(2026, 12, 1, 10, 7, 30, tzinfo=UTC)) - bucket_of(datetime(2026, 12, 1, 10, 5, tzinfo=UTC))
0
>>> start_of(bucket_of(datetime(2026, 12, 1, 10, 7, 30, tzinfo=UTC))).isoformat()
'2026-12-01T10:05:00+00:00'
"""

from __future__ import annotations

from datetime import UTC, datetime

from app.models.rollups import bucket_of
from detectors.rules.spec import BUCKET_SECONDS

__all__ = ["BUCKET_SECONDS", "bucket_of", "floor_epoch", "start_of"]


def floor_epoch(epoch: float) -> int:
    """The start of the bucket holding epoch second ``epoch``."""
    return int(epoch // BUCKET_SECONDS) * BUCKET_SECONDS


def start_of(bucket: int) -> datetime:
    return datetime.fromtimestamp(bucket, tz=UTC)
