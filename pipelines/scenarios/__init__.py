"""Seeded scenario generator: realistic agent workloads with injectable failure modes.

>>> from datetime import UTC, datetime, timedelta
>>> start = datetime(2025, 1, 1, tzinfo=UTC)
>>> events = generate_workload(7, start, timedelta(hours=1), traces_per_hour=30)
>>> records = events_to_records(events)
>>> len({r.agent for r in records}) > 1, events == generate_workload(
...     7, start, timedelta(hours=1), traces_per_hour=30)
(True, True)
"""

from pipelines.scenarios.convert import as_of, embedding_stream, events_to_records, window
from pipelines.scenarios.injections import FAILURE_MODES, STRENGTHS, Effects, Injection
from pipelines.scenarios.profiles import DEFAULT_AGENTS
from pipelines.scenarios.vlm import IMAGE_STREAM
from pipelines.scenarios.workload import generate_workload

__all__ = [
    "DEFAULT_AGENTS",
    "FAILURE_MODES",
    "IMAGE_STREAM",
    "STRENGTHS",
    "Effects",
    "Injection",
    "as_of",
    "embedding_stream",
    "events_to_records",
    "generate_workload",
    "window",
]
