"""The shape of agent traffic as the step-level detectors read it.

Steps and tool calls per trace, how often tool calls and other steps fail, what follows a
failed tool call (the next step, the next tool call), and task success: what
``bench/traffic_shape.py`` compares between real trajectories and this generator, and what
the generator's tests hold it to.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from detectors.records import TraceRecord, is_tool_step, step_error


def _quantiles(values: Sequence[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=float)
    return {"mean": round(float(a.mean()), 2), "p50": float(np.median(a)),
            "p90": float(np.quantile(a, 0.9))}  # fmt: skip


def _rate(hits: int, n: int) -> float | None:
    return round(hits / n, 4) if n else None


def traffic_shape(records: Iterable[TraceRecord]) -> dict[str, Any]:
    """What the step-level detectors read, summed over the traces."""
    n_steps, n_tools = [], []
    tool = tool_failed = other = other_failed = 0
    next_step = [0, 0, 0, 0]  # failed after failed tool, after failed tool, after ok, ok
    next_tool = [0, 0, 0, 0]
    traces = traces_with_tool_error = successes = 0
    for r in records:
        traces += 1
        steps = sorted(r.steps, key=lambda s: s.index)
        flags = [(is_tool_step(s), step_error(s)) for s in steps]
        n_steps.append(len(steps))
        n_tools.append(sum(t for t, _ in flags))
        traces_with_tool_error += any(t and e for t, e in flags)
        successes += r.success
        for i, (is_tool, err) in enumerate(flags):
            if is_tool:
                tool += 1
                tool_failed += err
            else:
                other += 1
                other_failed += err
            if not is_tool:
                continue
            slot = 0 if err else 2
            if i + 1 < len(flags):
                next_step[slot] += flags[i + 1][1]
                next_step[slot + 1] += 1
            later = [e for t, e in flags[i + 1 :] if t]
            if later:
                next_tool[slot] += later[0]
                next_tool[slot + 1] += 1
    return {
        "traces": traces,
        "steps_per_trace": _quantiles(n_steps),
        "tool_calls_per_trace": _quantiles(n_tools),
        "tool_call_failure_rate": _rate(tool_failed, tool),
        "other_step_failure_rate": _rate(other_failed, other),
        "traces_with_a_failed_tool_call": _rate(traces_with_tool_error, traces),
        "next_step_fails_after_failed_tool": _rate(next_step[0], next_step[1]),
        "next_step_fails_after_ok_tool": _rate(next_step[2], next_step[3]),
        "next_tool_call_fails_after_failed_tool": _rate(next_tool[0], next_tool[1]),
        "next_tool_call_fails_after_ok_tool": _rate(next_tool[2], next_tool[3]),
        "task_success": _rate(successes, traces),
    }
