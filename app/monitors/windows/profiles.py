"""Every trace of a sampled window counted by its step profile (detectors/step_profiles.py).

A window at volume is loaded as a sample (:mod:`app.monitors.windows.sampling`); FM-1's hazards by
depth and FM-2's lift tables are counts, and the issue of scale is that a count should be
over every trace, not a sample. Each trace's step profile is stored on its row
(``traces.step_profile``); the window's key query reads it with the keys, so the counts
are one pass over rows already read, with no span loaded for the traces outside the sample.

A profile is computed here, from the same records mapping the detectors see
(:func:`detectors.records.from_rows` via the window loader), the first time a sampled
window counts its trace, and written back to the primary; ingest clears it when a piece of
the trace arrives. The write matches on the ``updated_at`` it was computed from, so a trace
that grew meanwhile is not given its older profile (it is computed again next time). The
first cycle after an upgrade, or after a burst, pays for the traces not profiled yet; a
steady cycle profiles only the traces that settled since the last one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, and_, bindparam, update

from app.models import Trace
from detectors import records
from detectors.step_profiles import ProfileCounts, step_profile

ChunkLoader = Callable[[list[Any]], list[records.TraceRecord]]
_CHUNK = 1000


@dataclass(frozen=True)
class WindowProfiles:
    counts: ProfileCounts
    computed: int

    def evidence(self) -> dict[str, Any]:
        return {
            "traces_counted": self.counts.traces,
            "distinct_profiles": len(self.counts.counts),
            "profiles_computed": self.computed,
        }


@dataclass
class ProfileTally:
    """A window's profile counts while they are being gathered: the stored ones counted,
    the missing ones of the sampled traces waiting for the sample's records."""

    counted: dict[tuple[str, str], int]
    waiting: list[Mapping[str, Any]]
    computed: int

    def finish(
        self, sampled: Sequence[records.TraceRecord], *, write_engine: Engine | None
    ) -> WindowProfiles:
        """Count the sampled traces that had no stored profile, from their records."""
        found = {r.trace_id: step_profile(r.steps) for r in sampled}
        for lo in range(0, len(self.waiting), _CHUNK):
            _count(self.counted, self.waiting[lo : lo + _CHUNK], found, write_engine)
        return WindowProfiles(ProfileCounts(self.counted), self.computed + len(self.waiting))


def count_window(
    keys: Sequence[Mapping[str, Any]],
    *,
    sampled: Collection[str],
    load_chunk: ChunkLoader,
    write_engine: Engine | None,
) -> ProfileTally:
    """Count the window's ``(source, profile)`` from its key rows (``project_id``,
    ``trace_id``, ``source``, ``step_profile``, ``updated_at``). Profiles not stored yet are
    computed: outside the sample from records loaded here (``load_chunk``), inside it from
    the sample's own records once they are loaded (:meth:`ProfileTally.finish`), so no
    trace's spans are read twice."""
    counted: dict[tuple[str, str], int] = {}
    waiting: list[Mapping[str, Any]] = []
    outside: list[Mapping[str, Any]] = []
    for row in keys:
        profile = row["step_profile"]
        if profile is None:
            (waiting if row["trace_id"] in sampled else outside).append(row)
            continue
        key = (row["source"] or "production", profile)
        counted[key] = counted.get(key, 0) + 1
    for lo in range(0, len(outside), _CHUNK):
        chunk = outside[lo : lo + _CHUNK]
        loaded = load_chunk([k["trace_id"] for k in chunk])
        _count(counted, chunk, {r.trace_id: step_profile(r.steps) for r in loaded}, write_engine)
    return ProfileTally(counted, waiting, computed=len(outside))


def _count(
    counted: dict[tuple[str, str], int],
    chunk: Sequence[Mapping[str, Any]],
    found: Mapping[str, str],
    write_engine: Engine | None,
) -> None:
    for row in chunk:
        key = (row["source"] or "production", found.get(row["trace_id"], ""))
        counted[key] = counted.get(key, 0) + 1
    if write_engine is not None:
        _store(write_engine, chunk, found)


def _store(engine: Engine, chunk: Sequence[Mapping[str, Any]], found: Mapping[str, str]) -> None:
    """Write the profiles back where the trace has not grown since it was read."""
    rows = [
        {"b_pid": row["project_id"], "b_tid": row["trace_id"], "b_at": row["updated_at"],
         "b_profile": found[row["trace_id"]]}
        for row in chunk
        if row["trace_id"] in found and row["updated_at"] is not None
    ]  # fmt: skip
    if not rows:
        return
    stmt = (
        update(Trace)
        .where(
            and_(
                Trace.project_id == bindparam("b_pid"),
                Trace.trace_id == bindparam("b_tid"),
                Trace.updated_at == bindparam("b_at"),
                Trace.step_profile.is_(None),
            )
        )
        .values(step_profile=bindparam("b_profile"))
    )
    with engine.begin() as conn:
        conn.execute(stmt, rows)
