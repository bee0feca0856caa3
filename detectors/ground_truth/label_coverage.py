"""FM-4 label coverage: how much of a window is labeled, per cohort, and how late.

A label is a ``true`` score from a ``delayed`` or ``human`` source, visible only once
``created_at <= now``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from detectors.records import Score, TraceRecord


def visible_label(trace: TraceRecord, now: float) -> Score | None:
    """The latest ground-truth label that had arrived by ``now`` (``created_at <= now``)."""
    labels = [s for s in trace.scores if s.is_label and s.created_at <= now]
    return max(labels, key=lambda s: s.created_at) if labels else None


def label_coverage(traces: Sequence[TraceRecord], now: float) -> list[dict[str, Any]]:
    """Per cohort (agent, agent_version, task_type): traces, labeled fraction and label delay.

    Label delay is ``label.created_at - trace.ended_at`` (seconds, clipped at 0) over the
    labels visible at ``now``; ``pending_age_median_s`` is the median ``now - ended_at`` of the
    traces still waiting for a label.
    """
    cohorts: dict[tuple[str, str, str], list[TraceRecord]] = defaultdict(list)
    for t in traces:
        cohorts[(t.agent, t.agent_version, t.task_type)].append(t)
    rows = []
    for (agent, version, task_type), members in sorted(cohorts.items()):
        delays, pending = [], []
        for t in members:
            label = visible_label(t, now)
            if label is None:
                pending.append(max(0.0, now - t.ended_at))
            elif label.created_at > 0:  # created_at 0.0 means "time unknown"
                delays.append(max(0.0, label.created_at - t.ended_at))
        n_labeled = len(members) - len(pending)
        rows.append(
            {
                "agent": agent,
                "agent_version": version,
                "task_type": task_type,
                "n_traces": len(members),
                "n_labeled": n_labeled,
                "coverage": n_labeled / len(members),
                "label_delay_median_s": float(np.median(delays)) if delays else None,
                "label_delay_p90_s": float(np.quantile(delays, 0.9)) if delays else None,
                "pending_age_median_s": float(np.median(pending)) if pending else None,
            }
        )
    return rows
