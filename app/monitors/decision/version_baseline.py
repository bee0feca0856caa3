"""A baseline of "the version before this one": ``selection.reference_version``.

``"previous"`` compares the agent version the current window runs with the one that
preceded it; a version string (``"v1"``) compares it with that version. Definitions:

* **The current window's version** is its *dominant* version: the ``agent_version``
  with the most traces in the window (ties: the one first seen last, i.e. the newer of a
  rollout), among traces that name a version. While a rollout mixes versions the window
  is read as that version's: only its traces are tested, so the comparison is one version
  against another, never a blend whose mix changes run to run. The minority's traffic
  is tested by the window in which it dominates (a rollout past half, or a rollback).
* **Versions are ordered by first seen**: the start of their earliest trace (within the
  monitor's agent and source, before the window's end). ``previous`` is the version
  first seen just before the current one: after a rollback to v1 from v2, v1's
  predecessor is v0 again, not v2.
* **The reference** is the last ``reference_window_seconds`` of that version's traffic
  before the current window starts: ``[last - reference, last]`` with ``last`` its newest
  trace start before the window (so it never overlaps the current window, even while
  the versions overlap in time). It does not follow a failure of the new version, so it
  is not frozen while an alert is open (like a pinned range). Embedding streams (FM-6)
  carry no version: their reference is the vectors of that time range.
* **No reference** is not an error: when the current window's traces name no version,
  no version precedes its version, or the reference version has no traffic before the
  window, the run is ``insufficient_data`` with the reason, and the detector is not run.

Cost: one grouped count over the current window and one grouped ``min``/``max`` per
version over the monitor's traces before the window's end (``ix_traces_project_agent``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import Trace
from app.monitors.decision.baseline import BaselinePolicy, Windows

PREVIOUS = "previous"
INCLUSIVE = timedelta(microseconds=1)  # windows are half-open: keep the newest trace


@dataclass(frozen=True)
class VersionWindows:
    """The run's windows with the version reference, or why there is none."""

    windows: Windows
    reason: str | None = None


def _where(q: Any, *, project_id: int, selection: Mapping[str, Any]) -> Any:
    q = q.where(Trace.project_id == project_id, Trace.agent_version != "")
    if selection.get("agent"):
        q = q.where(Trace.agent == selection["agent"])
    if selection.get("source"):
        q = q.where(Trace.source == selection["source"])
    return q


def resolve(
    session: Session,
    *,
    project_id: int,
    selection: Mapping[str, Any],
    policy: BaselinePolicy,
    windows: Windows,
) -> VersionWindows:
    """``windows`` with the reference replaced by the version reference (mode ``version``)."""
    setting = policy.reference_version or PREVIOUS
    cur_start, cur_end = windows.current_start, windows.current_end

    def scoped(q: Any) -> Any:
        return _where(q, project_id=project_id, selection=selection)

    counts: list[tuple[str, int]] = [
        (str(v), int(n))
        for v, n in session.execute(
            scoped(select(Trace.agent_version, func.count()))
            .where(Trace.started_at >= cur_start, Trace.started_at < cur_end)
            .group_by(Trace.agent_version)
        ).all()
    ]
    if not counts:
        return VersionWindows(windows, "the current window's traces carry no agent_version")
    first_seen: dict[str, datetime] = {
        str(v): t
        for v, t in session.execute(
            scoped(select(Trace.agent_version, func.min(Trace.started_at)))
            .where(Trace.started_at < cur_end)
            .group_by(Trace.agent_version)
        ).all()
    }
    current = max(counts, key=lambda row: (row[1], first_seen[row[0]]))[0]
    if setting == PREVIOUS:
        earlier = [v for v, t in first_seen.items() if t < first_seen[current]]
        if not earlier:
            return VersionWindows(
                windows, f"no agent version was seen before {current!r}, the current window's"
            )
        reference = max(earlier, key=lambda v: first_seen[v])
    else:
        reference = setting
    last = session.scalar(
        scoped(select(func.max(Trace.started_at))).where(
            Trace.agent_version == reference, Trace.started_at < cur_start
        )
    )
    if last is None:
        return VersionWindows(
            windows, f"agent version {reference!r} has no traces before the current window"
        )
    end = last + INCLUSIVE
    return VersionWindows(
        replace(
            windows,
            reference_start=end - policy.reference,
            reference_end=end,
            mode="version",
            current_version=current,
            reference_version=reference,
        )
    )
