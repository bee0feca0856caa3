"""When an outcome regression began: the change point of the signal that fired, in the
current window (:mod:`detectors.change_point`, :mod:`detectors.outcomes`).

Each fired signal is read per trace of the whole current window, in time order: an
objective's value on the traces it labels, whether a trace failed, whether a trace's calls
of the tool failed, its latency (log seconds: a latency step is a ratio) or its step count;
the level before the change is the reference's (its rate, mean or median).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from detectors.change_point import step_onset
from detectors.outcome_judged import judge_value
from detectors.outcome_values import objective_values
from detectors.records import TraceRecord, is_tool_step, step_error

# Signals whose step is a ratio (read in logs): latency, tokens and cost per trace.
RATIO_SIGNALS = frozenset({"latency_s", "tokens_per_trace", "cost_per_trace"})


def onset(cur: Sequence[TraceRecord], row: dict[str, Any]) -> float | None:
    """The estimated start (epoch seconds) of the change ``row`` (a fired sub-test) found."""
    times, values = _series(cur, row)
    if row["signal"] in RATIO_SIGNALS:
        values = np.log(np.maximum(values, 1e-3))
        before = float(np.log(max(float(row["before"]), 1e-3)))
    elif row.get("method") == "judge_stable":
        before = float(row["judge_before"])
    else:
        before = float(row["before"])
    direction = -1.0 if row["signal"] == "objective" else 1.0
    return step_onset(times, values, before=before, direction=direction)


def _series(cur: Sequence[TraceRecord], row: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    signal, name = row["signal"], row["name"]
    pairs: list[tuple[float, float]] = []
    for t in cur:
        value: float | None = None
        if signal == "objective" and row.get("method") == "judge_stable":
            f = judge_value(t, row["judge"], name)
            value = None if f is None else float(f >= 0.5)
        elif signal == "objective":
            v = objective_values([t], name)
            value = float(v[0]) if v.size else None
        elif signal == "trace_error_rate":
            value = float(t.status == "error")
        elif signal == "loop_rate":
            value = None if t.loop_calls is None else float(t.has_loop)
        elif signal == "tool_error_rate":
            calls = [s for s in t.steps if is_tool_step(s) and (s.tool_name or s.name) == name]
            value = float(any(step_error(s) for s in calls)) if calls else None
        elif signal == "latency_s":
            value = t.ended_at - t.started_at if t.ended_at > t.started_at else None
        elif signal == "steps_per_trace":
            value = float(len(t.steps)) if t.steps else None
        elif signal == "tokens_per_trace":
            value = None if t.tokens is None else float(t.tokens)
        elif signal == "cost_per_trace":
            value = t.cost
        if value is not None:
            pairs.append((t.started_at, value))
    if not pairs:
        return np.empty(0), np.empty(0)
    arr = np.asarray(pairs, dtype=float)
    return arr[:, 0], arr[:, 1]
