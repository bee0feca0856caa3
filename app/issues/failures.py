"""A failure event of a trace, before it is grouped: what :mod:`app.issues.record` takes.

The derive job finds them (:mod:`app.derive.failure_events`: failed steps and tool calls,
loops, set-aside traces); this package groups and stores them, and never reads a trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Failure:
    """One failure event of a trace, before it is grouped."""

    source: str  # step | tool | loop | derive
    span_id: str | None
    at: datetime | None
    span_kind: str
    tool: str
    error_type: str
    message: str
