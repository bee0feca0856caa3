"""A trace's steps as a short string, so a window's step statistics count every trace.

FM-1's hazards by depth and FM-2's cascade lift tables read each step through two bits
only: is it a tool call (:func:`~detectors.records.is_tool_step`) and did it fail
(:func:`~detectors.records.step_error`). A trace's *step profile* writes them one
character a step, in step order: ``t``/``T`` a tool call ok/failed, ``s``/``S`` any other
step ok/failed. A window of traces is then a handful of distinct profiles with counts:
the service stores each trace's profile and counts them with one ``GROUP BY`` over every
trace of a window (``app/monitors/windows/profiles.py``), where loading every trace's spans
would cost a window at 100,000 traces/h minutes. Where the records a detector gets are
only a sample of the window, :class:`RecordWindow` carries these whole-window counts
beside them, and the count statistics are computed from the counts.

>>> from detectors.records import Step
>>> step_profile([Step(1, "llm", "plan", status="error"), Step(0, "tool", "search")])
'tS'
>>> profile_steps("tTs")
[(True, False), (True, True), (False, False)]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from detectors.records import Step, TraceRecord, is_tool_step, step_error

if TYPE_CHECKING:
    from detectors.ground_truth.label_coverage import LabelCounts

TOOL_OK, TOOL_FAILED, STEP_OK, STEP_FAILED = "t", "T", "s", "S"
_CHAR = {(True, False): TOOL_OK, (True, True): TOOL_FAILED,
         (False, False): STEP_OK, (False, True): STEP_FAILED}  # fmt: skip
_FLAGS = {c: flags for flags, c in _CHAR.items()}


def step_profile(steps: Iterable[Step]) -> str:
    """The steps' profile, in step order (``Step.index``)."""
    ordered = sorted(steps, key=lambda s: s.index)
    return "".join(_CHAR[(is_tool_step(s), step_error(s))] for s in ordered)


def profile_steps(profile: str) -> list[tuple[bool, bool]]:
    """``(is a tool call, failed)`` per step of a profile."""
    return [_FLAGS[c] for c in profile]


@dataclass(frozen=True)
class ProfileCounts:
    """How many traces of a window have each ``(source, step profile)``: every trace of the
    window, counted in the database. ``traces`` is how many traces that is."""

    counts: Mapping[tuple[str, str], int]

    @classmethod
    def of(cls, traces: Iterable[TraceRecord]) -> ProfileCounts:
        """The counts the database would give for these records.

        >>> from detectors.records import Step
        >>> ProfileCounts.of([TraceRecord("a", "bot", steps=(Step(0, "tool", "x"),))]).counts
        {('production', 't'): 1}
        """
        counted: dict[tuple[str, str], int] = {}
        for t in traces:
            key = (t.source, step_profile(t.steps))
            counted[key] = counted.get(key, 0) + 1
        return cls(counted)

    @property
    def traces(self) -> int:
        return int(sum(self.counts.values()))

    def for_sources(self, sources: Iterable[str]) -> list[tuple[str, int]]:
        """``(profile, traces)`` of the given sources, profiles merged across them, sorted."""
        keep = frozenset(sources)
        merged: dict[str, int] = {}
        for (source, profile), n in self.counts.items():
            if source in keep:
                merged[profile] = merged.get(profile, 0) + int(n)
        return sorted(merged.items())


class RecordWindow(list[TraceRecord]):
    """A window's records, and where they are a sample, counts over the whole window.

    Detectors take any sequence of records; one of these tells the count statistics to
    read the whole-window counts instead of the sampled records: :attr:`step_profiles`
    (FM-1's hazards, FM-2's lift tables) and :attr:`label_counts` (FM-4's label coverage
    and delay, :class:`detectors.ground_truth.label_coverage.LabelCounts`), while the
    record-level sub-tests (confidences, latencies, tool names) read the sample.
    """

    def __init__(
        self,
        records: Iterable[TraceRecord] = (),
        *,
        step_profiles: ProfileCounts | None = None,
        label_counts: LabelCounts | None = None,
    ) -> None:
        super().__init__(records)
        self.step_profiles = step_profiles
        self.label_counts = label_counts

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (list(self), self.step_profiles, self.label_counts))


def _rebuild(
    records: list[TraceRecord], profiles: ProfileCounts | None, labels: LabelCounts | None
) -> RecordWindow:
    return RecordWindow(records, step_profiles=profiles, label_counts=labels)


def whole_window_profiles(
    window: Sequence[TraceRecord], sources: Iterable[str]
) -> list[tuple[str, int]] | None:
    """The window's ``(profile, traces)`` over every trace when it carries them, else None
    (the records are the whole window: count them)."""
    profiles = getattr(window, "step_profiles", None)
    return profiles.for_sources(sources) if isinstance(profiles, ProfileCounts) else None


def weighted_rows(
    rows_by_profile: Mapping[str, np.ndarray], profiles: Sequence[tuple[str, int]], width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Count rows (one per distinct profile) and how many traces each stands for."""
    if not profiles:
        return np.zeros((0, width)), np.zeros(0, dtype=np.int64)
    rows = np.array([rows_by_profile[p] for p, _ in profiles], dtype=float).reshape(-1, width)
    return rows, np.array([n for _, n in profiles], dtype=np.int64)
