"""The load stage of a run: a plan's reference and current windows, through the cycle's cache.

Every run reads its windows here, whichever way it came in (a scheduler tick, ``run now``,
a replay): through the :class:`~app.monitors.windows.cache.WindowCache` of its cycle, so
the monitors of one cycle that read the same bounds share one load. What the detector
reads follows its declarations: embedding streams for a detector that needs stream
vectors, trace records otherwise (with their input/output vectors when it needs those),
and whole-window counts beside a sampled window for a detector that declares
``window_counts`` (the plan carries the declaration); an alert rule's series from the
rollups (:mod:`app.rollups.series`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.monitors.plan import RunPlan
from app.monitors.readiness import recorded
from app.monitors.windows import arrivals, history, issue_counts, label_counts, vectors
from app.monitors.windows import trace_window as traces
from app.monitors.windows.cache import WindowCache
from app.rollups import series as rollup_series
from app.rollups.buckets import BUCKET_SECONDS, floor_epoch
from app.scores import roles as score_roles
from detectors.needs import (
    COUNT_NEEDS,
    ISSUE_NEEDS,
    ROLLUP_NEEDS,
    STREAM_NEEDS,
    TRACE_EMBEDDING_NEEDS,
)
from detectors.rules.detector import RuleDetector, lookback_buckets


@dataclass(frozen=True)
class RunWindows:
    """What a detector compares, and what the run's evidence says of the windows."""

    reference: Any
    current: Any
    sample: dict[str, Any] = field(default_factory=dict)
    # The current window's readiness counts, kept with the run (app/monitors/readiness/recorded.py).
    readiness: dict[str, Any] | None = None

    @property
    def sizes(self) -> tuple[int, int]:
        """Records (or vectors, over every stream) in the reference and current windows."""
        return _size(self.reference), _size(self.current)


def load(
    plan: RunPlan, *, data: Session, cycle: WindowCache, write_engine: Engine | None
) -> RunWindows:
    """The plan's windows read through ``data`` (step profiles computed on the way are
    written through ``write_engine``)."""
    needs = set(plan.detector.needs if plan.detector is not None else ())
    if needs & ROLLUP_NEEDS:
        return _rollups(plan, data=data)
    if needs & COUNT_NEEDS:
        return _arrivals(plan, data=data, cycle=cycle)
    if needs & ISSUE_NEEDS:
        return _issues(plan, data=data)
    if needs & STREAM_NEEDS:
        return _streams(plan, data=data, cycle=cycle)
    return _traces(plan, data=data, cycle=cycle, write_engine=write_engine,
                   with_embeddings=bool(needs & TRACE_EMBEDDING_NEEDS))  # fmt: skip


def _rollups(plan: RunPlan, *, data: Session) -> RunWindows:
    """An alert rule's series from the rollups, ending on the run's step (the last bucket
    its evaluation delay says is complete) and reaching back as far as the step needs."""
    detector = plan.detector
    assert isinstance(detector, RuleDetector)
    spec = detector.spec
    end = floor_epoch(plan.as_of.timestamp() - spec.evaluation_delay_seconds)
    start = end - lookback_buckets(spec, detector.interval_seconds) * BUCKET_SECONDS
    series = rollup_series.read_series(data, project_id=plan.project_id, spec=spec,
                                       start=start, end=end)  # fmt: skip
    return RunWindows((), series, {"rollups": {"start": start, "end": end}})


def _arrivals(plan: RunPlan, *, data: Session, cycle: WindowCache) -> RunWindows:
    """The silence monitor's comparisons (its windows are its own: the last 15 minutes and
    hour against the same hours of earlier days, :mod:`app.monitors.windows.arrivals`)."""
    pid = plan.project_id
    begun = cycle.history_start(pid, lambda: history.history_start(data, project_id=pid))
    counts = arrivals.arrival_counts(
        data, project_id=pid, now=plan.windows.current_end, history_start=begun,
        agent=(plan.monitor.selection or {}).get("agent"),
    )  # fmt: skip
    return RunWindows([], counts)


def _issues(plan: RunPlan, *, data: Session) -> RunWindows:
    """The failure issues' counts in the reference and current windows (ISSUES)."""
    w, agent = plan.windows, (plan.monitor.selection or {}).get("agent")

    def window(start: datetime, end: datetime) -> list[Any]:
        return issue_counts.issue_counts(
            data, project_id=plan.project_id, start=start, end=end, agent=agent
        )

    return RunWindows(
        window(w.reference_start, w.reference_end), window(w.current_start, w.current_end)
    )


def _streams(plan: RunPlan, *, data: Session, cycle: WindowCache) -> RunWindows:
    sel, pid, w = plan.monitor.selection or {}, plan.project_id, plan.windows
    streams = vectors.embedding_streams(
        data, project_id=pid, stream=sel.get("stream"), agent=sel.get("agent")
    )

    def window(stream: str, start: datetime, end: datetime) -> np.ndarray:
        return cycle.vectors(
            (pid, stream, start, end),
            lambda: vectors.load_embedding_window(
                data, project_id=pid, stream=stream, start=start, end=end
            ),
        )

    return RunWindows(
        {s: window(s, w.reference_start, w.reference_end) for s in streams},
        {s: window(s, w.current_start, w.current_end) for s in streams},
    )


def _traces(
    plan: RunPlan, *, data: Session, cycle: WindowCache, write_engine: Engine | None,
    with_embeddings: bool,
) -> RunWindows:  # fmt: skip
    sel, pid, w = plan.monitor.selection or {}, plan.project_id, plan.windows
    tsel = traces.TraceSelection(
        project_id=pid,
        agent=sel.get("agent"),
        source=sel.get("source"),
        max_traces=int(sel.get("max_traces", traces.DEFAULT_MAX_TRACES)),
        roles=score_roles.with_predictions(
            data, score_roles.get_roles(data, project_id=pid), project_id=pid
        ),
    )

    def window(start: datetime, end: datetime, version: str | None) -> traces.TraceWindow:
        vsel = replace(tsel, agent_version=version)
        return cycle.trace_window(
            (vsel, start, end, w.current_end),
            with_embeddings=with_embeddings,
            load=lambda: traces.load_trace_window(
                data, vsel, start=start, end=end, as_of=w.current_end, with_embeddings=False,
                profile_writer=write_engine, step_cache=cycle.steps,
            ),
            attach=lambda tw: traces.with_trace_embeddings(data, tw, project_id=pid),
        )  # fmt: skip

    ref_version, cur_version = w.versions
    ref = window(w.reference_start, w.reference_end, ref_version)
    cur = window(w.current_start, w.current_end, cur_version)
    sample = {"reference": ref.evidence(), "current": cur.evidence()}
    current: Any = cur.records
    if "labels" in plan.window_counts and cur.sample.rate < 1.0:
        # A sampled window: FM-4's coverage and delays count every trace of it.
        current = label_counts.with_label_counts(
            data, cur, replace(tsel, agent_version=cur_version),
            start=w.current_start, end=w.current_end, cache=cycle,
        )  # fmt: skip
        sample["current"]["label_counts"] = {"traces_counted": current.label_counts.traces}
    kept = recorded.count_for_run(data, tsel, start=w.current_start, end=w.current_end, cycle=cycle)
    return RunWindows(ref.records, current, sample, kept)


def _size(window: Any) -> int:
    if isinstance(window, Mapping):
        return int(sum(len(v) for v in window.values()))
    return len(window)
