"""FM-2 tool calls of a window: cascade pairs and depths, silently wrong results, latency.

:func:`tool_window` reads a window's traces once into what the FM-2 sub-tests need: per
trace the next-step failure counts after a failed and after an ok tool call (the units of
the permutation test), cascade depths by the tool that started them, per tool the ok calls
whose result was available but wrong, and per trace the mean tool latency and its quality.
Where the records are a sample of the window, the pairs, depths and tool calls are counted
over every trace instead, from the window's step profiles (:mod:`detectors.step_profiles`);
what needs tool names, results or times stays the sample's.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from detectors.records import Step, TraceRecord, is_tool_step, step_error
from detectors.step_profiles import profile_steps, weighted_rows

DEPTH_BINS = ("0", "1", "2", "3", "4", "5+")


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1", "yes"))


def available_but_wrong(step: Step) -> bool:
    """An ``ok`` tool result flagged ``partial``/``stale`` or with ``result_count == 0``."""
    attrs = step.attributes
    count = attrs.get("result_count")
    empty = isinstance(count, int | float) and not isinstance(count, bool) and count == 0
    return not step_error(step) and (
        _truthy(attrs.get("partial")) or _truthy(attrs.get("stale")) or empty
    )


def trace_quality(trace: TraceRecord) -> float:
    """The ``quality`` score, else the latest ``true`` score, else success as 0/1."""
    score = trace.score("quality")
    if score is None:
        true_scores = [s for s in trace.scores if s.kind == "true"]
        score = max(true_scores, key=lambda s: s.created_at) if true_scores else None
    return float(score.value) if score is not None else float(trace.success)


def log_lift(sums: np.ndarray) -> np.ndarray:
    """Log of the smoothed lift ``((a+.5)/(n1+1)) / ((c+.5)/(n0+1))`` from (..., 4) sums."""
    a, n1, c, n0 = (sums[..., i] for i in range(4))
    return np.asarray(np.log((a + 0.5) / (n1 + 1.0)) - np.log((c + 0.5) / (n0 + 1.0)))


def excess_risk(sums: np.ndarray) -> np.ndarray:
    """``P(t+1 fails | t failed) - P(t+1 fails | t ok)`` from (..., 4) sums of (a, n1, c, n0)."""
    a, n1, c, n0 = (sums[..., i] for i in range(4))
    return np.asarray(a / np.maximum(n1, 1.0) - c / np.maximum(n0, 1.0))


def cascades(flags: Sequence[tuple[bool, bool]]) -> tuple[list[int], list[tuple[int, int]]]:
    """``(a, n1, c, n0)`` and the ``(step, depth)`` of each cascade, from ``(is a tool call,
    failed)`` per step in order.

    Real agents put a model reply between tool calls, and the reply rarely fails: what a
    failed tool call spoils is the *next tool call*. So each tool call with a later step
    is paired with what follows it up to and including the next tool call (to the end of
    the trace when none follows): the pair fails when any of those steps fails. A cascade
    is a run of failures that a failed tool call starts; ok model steps inside it do not
    end it, an ok tool call does. Its depth is the number of failed steps after the tool.

    >>> cascades([(True, True), (False, False), (True, True), (False, False), (True, False)])
    ([1, 2, 0, 0], [(0, 1)])
    >>> cascades([(True, True), (False, True), (True, False), (False, False)])
    ([1, 1, 0, 1], [(0, 1)])
    """
    counts = [0, 0, 0, 0]  # a, n1, c, n0: next fails | tool failed, next fails | tool ok
    found: list[tuple[int, int]] = []
    in_run = False
    for i, (tool, err) in enumerate(flags):
        if tool and i + 1 < len(flags):
            spoiled = False
            for later_tool, later_err in flags[i + 1 :]:
                spoiled = spoiled or later_err
                if later_tool:
                    break
            slot = 0 if err else 2
            counts[slot] += spoiled
            counts[slot + 1] += 1
        if err and tool and not in_run:
            depth = 0
            for later_tool, later_err in flags[i + 1 :]:
                if later_err:
                    depth += 1
                elif later_tool:
                    break
            found.append((i, depth))
        if err:
            in_run = True
        elif tool:
            in_run = False
    return counts, found


def profile_cascades(profile: str) -> tuple[list[int], list[int], int]:
    """One step profile's ``(a, n1, c, n0)``, the depths of the cascades its failed tool
    calls start (:func:`cascades`), and its tool calls (what :func:`tool_window` counts).

    >>> profile_cascades("sTSSts")
    ([1, 1, 0, 1], [2], 2)
    >>> profile_cascades("tsTsTst")
    ([1, 2, 1, 1], [1], 4)
    """
    flags = profile_steps(profile)
    counts, found = cascades(flags)
    return counts, [d for _, d in found], sum(tool for tool, _ in flags)


def tool_window(
    traces: Sequence[TraceRecord], whole: Sequence[tuple[str, int]] | None = None
) -> dict[str, Any]:
    """One pass over a window's traces (see the module docstring); ``whole``: the window's
    ``(step profile, traces)`` over every trace, where ``traces`` are a sample of it."""
    pairs, depths, latency, quality = [], [], [], []
    started: dict[str, list[int]] = defaultdict(list)
    abw: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    longest: list[tuple[int, str]] = []
    n_tool = 0
    for trace in traces:
        steps = sorted(trace.steps, key=lambda s: s.index)
        counts, found = cascades([(is_tool_step(s), step_error(s)) for s in steps])
        tool_latency = []
        for step in steps:
            if not is_tool_step(step):
                continue
            n_tool += 1
            tool_latency.append(step.latency_s)
            if not step_error(step):
                name = step.tool_name or step.name
                abw[name][0] += available_but_wrong(step)
                abw[name][1] += 1
        for i, depth in found:
            depths.append(depth)
            started[steps[i].tool_name or steps[i].name].append(depth)
            longest.append((depth, trace.trace_id))
        pairs.append(counts)
        if tool_latency:
            latency.append(float(np.mean(tool_latency)))
            quality.append(trace_quality(trace))
    longest.sort(key=lambda x: (-x[0], x[1]))
    pair_rows = np.array(pairs, dtype=float).reshape(-1, 4)
    weights = None
    if whole is not None:
        by_profile = {p: profile_cascades(p) for p, _ in whole}
        pair_rows, weights = weighted_rows(
            {p: np.array(c[0]) for p, c in by_profile.items()}, whole, 4
        )
        depths = [d for p, n in whole for d in by_profile[p][1] * n]
        n_tool = sum(by_profile[p][2] * n for p, n in whole)
    return {
        "n_tool_calls": n_tool,
        "pairs": pair_rows,
        "pair_weights": weights,
        "pair_sums": pair_rows.sum(axis=0) if weights is None else weights @ pair_rows,
        "depths": np.array(depths, dtype=int),
        "started": started,
        "abw": abw,
        "latency": np.array(latency),
        "quality": np.array(quality),
        "examples": [tid for d, tid in longest[:5] if d > 0],
    }


def depth_histogram(depths: np.ndarray) -> dict[str, int]:
    binned = Counter(DEPTH_BINS[min(int(d), 5)] for d in depths)
    return {b: binned.get(b, 0) for b in DEPTH_BINS}


def spearman_rho(x: np.ndarray, y: np.ndarray) -> float | None:
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(stats.spearmanr(x, y).statistic)
