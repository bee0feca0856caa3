"""Stored times read as float epoch seconds, and the step order of stored spans.

Rows come from the database (``datetime``), from native ingest event bodies (ISO-8601
strings) or from tests (numbers): :func:`epoch_seconds` reads all three, and
:func:`step_order_key` orders a trace's spans as the detectors number its steps
(:func:`detectors.records.from_rows`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

_ISO_BASES: dict[str, float] = {}
_NO_INDEX = float("inf")


def epoch_seconds(value: str | float | datetime | None, default: float = 0.0) -> float:
    """A stored time as float epoch seconds: a number, a ``datetime`` or an ISO-8601 string.

    ``None`` gives ``default``. A naive ``datetime`` is read as local time (``timestamp()``).

    >>> epoch_seconds("2025-03-03T00:00:01.500Z"), epoch_seconds(None, 7.0)
    (1740960001.5, 7.0)
    """
    if value is None:
        return default
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, datetime):
        return value.timestamp()
    if len(value) == 24 and value[19] == "." and value[23] == "Z":  # the generator's format
        base = _ISO_BASES.get(value[:19])
        if base is None:  # parsing is the hot path of the scenario converter: cache per second
            if len(_ISO_BASES) > 200_000:
                _ISO_BASES.clear()
            base = _ISO_BASES[value[:19]] = datetime.fromisoformat(
                value[:19] + "+00:00"
            ).timestamp()
        return base + int(value[20:23]) / 1000.0
    return datetime.fromisoformat(value).timestamp()


def step_order_key(span: Mapping[str, Any]) -> tuple[float, float, str]:
    """Sort key of a stored span in its trace: ``step_index`` (none: last), start, ``span_id``.

    >>> spans = [{"span_id": "b", "step_index": None, "started_at": 0.0},
    ...          {"span_id": "a", "step_index": 1, "started_at": 5.0},
    ...          {"span_id": "c", "step_index": 0, "started_at": 9.0}]
    >>> [s["span_id"] for s in sorted(spans, key=step_order_key)]
    ['c', 'a', 'b']
    """
    index = span.get("step_index")
    return (
        _NO_INDEX if index is None else float(index),
        epoch_seconds(span.get("started_at")),
        str(span.get("span_id") or ""),
    )
