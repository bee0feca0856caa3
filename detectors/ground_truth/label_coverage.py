"""FM-4 label coverage: how much of a window is labeled, per cohort, and how late.

A label is a ``true`` score from a ``delayed`` or ``human`` source, visible only once
``created_at <= now``. Coverage and delay are counts over a window's traces: where the
records a detector gets are a sample of the window, the service counts every trace of it
in the database (:class:`LabelCounts`, carried by
:class:`~detectors.step_profiles.RecordWindow`), and the coverage is computed from those
counts instead of the sample's records. Both come through one code path:
:meth:`LabelCounts.of` is what the database would count for the given records.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from detectors.records import Score, TraceRecord

Cohort = tuple[str, str, str]  # (agent, agent_version, task_type)


def visible_label(trace: TraceRecord, now: float) -> Score | None:
    """The latest ground-truth label that had arrived by ``now`` (``created_at <= now``)."""
    labels = [s for s in trace.scores if s.is_label and s.created_at <= now]
    return max(labels, key=lambda s: s.created_at) if labels else None


@dataclass(frozen=True)
class CohortLabels:
    """One cohort's traces: how many, the label delays (seconds) of the labeled ones whose
    label time is known, how many are labeled, and when the unlabeled ones ended;
    ``labeled_ended_at`` and ``labeled_delays`` are per labeled trace (the delay NaN where
    the label time is unknown), for the coverage-at-equal-age comparison."""

    n_traces: int
    n_labeled: int
    delays: np.ndarray
    pending_ended_at: np.ndarray
    labeled_ended_at: np.ndarray
    labeled_delays: np.ndarray


@dataclass(frozen=True)
class LabelCounts:
    """A window's production traces per cohort, labeled or not, as of the run's ``now``."""

    cohorts: Mapping[Cohort, CohortLabels]

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[Cohort, float, float | None]]) -> LabelCounts:
        """From one ``(cohort, ended_at, label_created_at or None)`` per trace: the trace's
        latest label visible at ``now``, None where it has none."""
        delays: dict[Cohort, list[float]] = defaultdict(list)
        pending: dict[Cohort, list[float]] = defaultdict(list)
        labeled: dict[Cohort, int] = defaultdict(int)
        labeled_at: dict[Cohort, list[tuple[float, float]]] = defaultdict(list)
        for cohort, ended_at, label_at in rows:
            if label_at is None:
                pending[cohort].append(ended_at)
                continue
            labeled[cohort] += 1
            delay = float("nan")
            if label_at > 0:  # created_at 0.0 means "time unknown"
                delay = max(0.0, label_at - ended_at)
                delays[cohort].append(delay)
            labeled_at[cohort].append((ended_at, delay))
        out = {}
        for cohort in set(pending) | set(labeled):
            out[cohort] = CohortLabels(
                n_traces=labeled[cohort] + len(pending[cohort]),
                n_labeled=labeled[cohort],
                delays=np.asarray(delays[cohort], dtype=float),
                pending_ended_at=np.asarray(pending[cohort], dtype=float),
                labeled_ended_at=np.array([e for e, _ in labeled_at[cohort]], dtype=float),
                labeled_delays=np.array([d for _, d in labeled_at[cohort]], dtype=float),
            )
        return cls(out)

    @classmethod
    def of(cls, traces: Iterable[TraceRecord], now: float) -> LabelCounts:
        """What the database would count for these records (the detector hands it the
        production ones, as the service counts only those).

        >>> from detectors.records import Score
        >>> t = TraceRecord("a", "bot", ended_at=10.0,
        ...                 scores=(Score("ok", 1.0, "true", "human", 70.0),))
        >>> c = LabelCounts.of([t, TraceRecord("b", "bot", ended_at=20.0)], now=100.0)
        >>> c.cohorts[("bot", "", "")].n_labeled, c.traces
        (1, 2)
        """
        rows = []
        for t in traces:
            label = visible_label(t, now)
            at = None if label is None else label.created_at
            rows.append(((t.agent, t.agent_version, t.task_type), t.ended_at, at))
        return cls.from_rows(rows)

    @property
    def traces(self) -> int:
        return int(sum(c.n_traces for c in self.cohorts.values()))


def whole_window_labels(window: Sequence[TraceRecord]) -> LabelCounts | None:
    """The window's label counts over every trace when it carries them (a sampled window
    from the service), else None: the records are the whole window."""
    counts = getattr(window, "label_counts", None)
    return counts if isinstance(counts, LabelCounts) else None


def label_coverage(
    traces: Sequence[TraceRecord], now: float, *, counts: LabelCounts | None = None
) -> list[dict[str, Any]]:
    """Per cohort (agent, agent_version, task_type): traces, labeled fraction and label delay.

    Label delay is ``label.created_at - trace.ended_at`` (seconds, clipped at 0) over the
    labels visible at ``now``; ``pending_age_median_s`` is the median ``now - ended_at`` of the
    traces still waiting for a label. With ``counts`` (every trace of the window) the
    records are not read.
    """
    found = counts if counts is not None else LabelCounts.of(traces, now)
    rows = []
    for (agent, version, task_type), c in sorted(found.cohorts.items()):
        pending = np.maximum(0.0, now - c.pending_ended_at)
        rows.append(
            {
                "agent": agent,
                "agent_version": version,
                "task_type": task_type,
                "n_traces": c.n_traces,
                "n_labeled": c.n_labeled,
                "coverage": c.n_labeled / c.n_traces,
                "label_delay_median_s": float(np.median(c.delays)) if c.delays.size else None,
                "label_delay_p90_s": (float(np.quantile(c.delays, 0.9)) if c.delays.size else None),
                "pending_age_median_s": float(np.median(pending)) if pending.size else None,
            }
        )
    return rows


def coverage_at_age(
    counts: LabelCounts, age_s: float, now: float, *, since: float = -np.inf
) -> tuple[int, int]:
    """``(labeled within age_s of their end, traces ended at least age_s before now)``.

    Labels arrive late, so a current window's coverage is low only because its newest
    traces wait for theirs. Compared at one age (the reference's usual label delay), the
    reference and the current window count the same thing: traces old enough, and those
    labeled within that time. A label whose time is unknown counts as on time.

    >>> from detectors.records import Score
    >>> t = TraceRecord("a", "bot", ended_at=0.0, scores=(Score("ok", 1.0, "true", "human", 50.0),))
    >>> coverage_at_age(LabelCounts.of([t, TraceRecord("b", "bot", ended_at=90.0)], 100.0), 60.0, 100.0)
    (1, 1)
    """
    cutoff = now - age_s
    labeled = eligible = 0
    for c in counts.cohorts.values():
        old = (c.labeled_ended_at <= cutoff) & (c.labeled_ended_at >= since)
        on_time = ~(c.labeled_delays > age_s)  # NaN (time unknown) counts as on time
        labeled += int((old & on_time).sum())
        pending = (c.pending_ended_at <= cutoff) & (c.pending_ended_at >= since)
        eligible += int(old.sum()) + int(pending.sum())
    return labeled, eligible


def earliest_end(counts: LabelCounts) -> float | None:
    """When the window's first trace ended (None: no trace)."""
    ends = [
        float(a.min())
        for c in counts.cohorts.values()
        for a in (c.labeled_ended_at, c.pending_ended_at)
        if a.size
    ]
    return min(ends) if ends else None


def coverage_evidence(
    cur: Sequence[TraceRecord],
    now: float,
    counts: LabelCounts,
    *,
    whole: bool,
    min_cohort_size: int,
    min_coverage: float,
) -> dict[str, Any]:
    """Coverage and delay per cohort from ``counts``: every trace of the window where the
    service counted them (``whole``; ``cur`` is then a sample), else ``cur``'s."""
    cohorts = label_coverage(cur, now, counts=counts)
    n_labeled = sum(c["n_labeled"] for c in cohorts)
    n_traces = sum(c["n_traces"] for c in cohorts)
    overall = n_labeled / n_traces if n_traces else 0.0
    needing = [
        {k: c[k] for k in ("agent", "agent_version", "task_type", "n_traces", "coverage")}
        for c in cohorts
        if c["n_traces"] >= min_cohort_size and c["coverage"] < min_coverage
    ]
    return {
        "label_coverage": overall,
        "needs_labels": bool(overall < min_coverage or needing),
        "cohorts_needing_labels": needing,
        "cohorts": cohorts,
        "coverage_counted_traces": "whole window" if whole else "records",
    }
