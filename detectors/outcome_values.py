"""What the outcome tests read from a window: its recent half, each trace's objective
values, latency, step count and tool calls (:mod:`detectors.outcomes`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from detectors.records import TraceRecord, is_tool_step, step_error

OBJECTIVE_KINDS = frozenset({"true", "guardrail"})


def recent_half(traces: Sequence[TraceRecord]) -> list[TraceRecord]:
    """The traces of the later half of the window's time span.

    Labels arrive hours late, so a window short enough to see a change soon holds few
    of them: objectives are tested on the whole window and on its recent half (Holm over
    both), the signals every trace carries at once on the recent half alone.
    """
    if not traces:
        return []
    starts = [t.started_at for t in traces]
    middle = (min(starts) + max(starts)) / 2.0
    return [t for t in traces if t.started_at >= middle]


def objective_names(traces: Sequence[TraceRecord]) -> set[str]:
    """The objectives the window's scores measure directly (a judge's scores, which predict
    one, are not objectives of their own: :func:`predicted_objectives`)."""
    return {
        s.name for t in traces for s in t.scores
        if s.kind in OBJECTIVE_KINDS and s.predicts is None
    }  # fmt: skip


def objective_values(traces: Sequence[TraceRecord], name: str) -> np.ndarray:
    """Each trace's latest value of the objective ``name`` (its labels; never a judge's)."""
    values = []
    for t in traces:
        found = [
            s for s in t.scores
            if s.name == name and s.kind in OBJECTIVE_KINDS and s.predicts is None
        ]  # fmt: skip
        if found:
            values.append(max(found, key=lambda s: s.created_at).value)
    return np.asarray(values, dtype=float)


def predicted_objectives(traces: Sequence[TraceRecord]) -> dict[str, dict[str, int]]:
    """Objective -> judge score name -> traces it scored, for the scores that predict one."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for t in traces:
        for objective, judge in {(s.predicts, s.name) for s in t.scores if s.predicts}:
            out[objective][judge] += 1
    return {objective: dict(judges) for objective, judges in out.items()}


def label_counts(ref: Sequence[TraceRecord], cur: Sequence[TraceRecord]) -> dict[str, Any]:
    """Traces with each objective, per window: what an outcome alert rests on."""
    out: dict[str, Any] = {}
    for name in sorted(objective_names(ref) | objective_names(cur)):
        out[name] = {
            "reference": int(objective_values(ref, name).size),
            "current": int(objective_values(cur, name).size),
        }
    return out


def latencies(traces: Sequence[TraceRecord]) -> np.ndarray:
    return np.asarray(
        [t.ended_at - t.started_at for t in traces if t.ended_at > t.started_at], dtype=float
    )


def step_counts(traces: Sequence[TraceRecord]) -> np.ndarray:
    return np.asarray([len(t.steps) for t in traces if t.steps], dtype=float)


def token_counts(traces: Sequence[TraceRecord]) -> np.ndarray:
    """Tokens per trace, over the traces whose model calls carry a count."""
    return np.asarray([n for t in traces if (n := t.tokens) is not None], dtype=float)


def costs(traces: Sequence[TraceRecord]) -> np.ndarray:
    """Cost per trace in USD, over the traces whose model calls carry one."""
    return np.asarray([c for t in traces if (c := t.cost) is not None], dtype=float)


def tool_calls(traces: Sequence[TraceRecord]) -> dict[str, tuple[int, int]]:
    """Per tool: (traces with a failed call of it, traces that called it).

    Counted by trace, not by call: an agent retries a failing call, so the calls of one
    trace fail together and a per-call Fisher test took a clean τ-bench hour's 30% -> 50%
    for a change (p = 0.003 on clean traffic).
    """
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for t in traces:
        called: dict[str, bool] = {}
        for step in t.steps:
            if is_tool_step(step):
                tool = step.tool_name or step.name
                called[tool] = called.get(tool, False) or step_error(step)
        for tool, failed in called.items():
            counts[tool][0] += failed
            counts[tool][1] += 1
    return {tool: (k, n) for tool, (k, n) in counts.items()}
