"""The words of an outcome alert: what got worse, how much, and traces that show it
(:mod:`detectors.outcomes`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from detectors.outcome_judged import describe_judged, describe_stable
from detectors.outcome_values import (
    costs,
    latencies,
    objective_values,
    step_counts,
    token_counts,
)
from detectors.records import TraceRecord, is_tool_step, step_error


def describe(row: dict[str, Any]) -> str:
    before, after = row["before"], row["after"]
    if row.get("method") == "ppi":
        return describe_judged(row)
    if row.get("method") == "judge_stable":
        return describe_stable(row)
    if row["signal"] == "objective":
        unused = f"; labels alone: {row['judge_unused']}" if "judge_unused" in row else ""
        return (
            f"{row['name']} fell {before:.3g} -> {after:.3g} on {row['n_current']} labels "
            f"(reference {row['n_reference']}){unused}"
        )
    if row["signal"] == "tool_error_rate":
        return (
            f"tool {row['name']} failed in {after:.1%} of {row['n_current']} traces calling it "
            f"(reference {before:.1%})"
        )
    if row["signal"] == "trace_error_rate":
        return f"{after:.1%} of {row['n_current']} traces failed (reference {before:.1%})"
    if row["signal"] == "loop_rate":
        return f"{after:.1%} of {row['n_current']} traces had a tool loop (reference {before:.1%})"
    if row["signal"] == "tokens_per_trace":
        return f"median tokens per trace rose {before:,.0f} -> {after:,.0f}"
    if row["signal"] == "cost_per_trace":
        return f"median cost per trace rose ${before:.4g} -> ${after:.4g}"
    unit = " s" if row["signal"] == "latency_s" else ""
    label = "median latency" if row["signal"] == "latency_s" else "median steps per trace"
    return f"{label} rose {before:.3g}{unit} -> {after:.3g}{unit}"


def summary(rows: Sequence[dict[str, Any]], fired: bool) -> str:
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:  # one line per signal: its most significant scope
        key = (row["signal"], row["name"])
        if row["fired"] and (key not in best or row["p_adjusted"] < best[key]["p_adjusted"]):
            best[key] = row
    fired_rows = list(best.values())
    if fired_rows:
        return "; ".join(
            f"{describe(r)}, p={r['p_adjusted']:.2g}"
            for r in sorted(fired_rows, key=lambda r: r["p_adjusted"])
        )
    nearest = min(rows, key=lambda r: r["p_adjusted"])
    return f"no outcome got worse; closest: {describe(nearest)}, p={nearest['p_adjusted']:.2g}"


def example_trace_ids(
    cur: Sequence[TraceRecord], objectives: list[dict[str, Any]], operations: list[dict[str, Any]]
) -> list[str]:
    """Up to five current traces that show the worst fired signal."""
    fired = sorted(
        (r for r in objectives + operations if r["fired"]), key=lambda r: r["p_adjusted"]
    )
    if not fired:
        return []
    row = fired[0]
    if row["signal"] == "objective":
        threshold = row["before"]
        picked = [
            t.trace_id
            for t in cur
            if (v := objective_values([t], row["name"])).size and v[0] < threshold
        ]
    elif row["signal"] == "tool_error_rate":
        picked = [
            t.trace_id
            for t in cur
            if any(is_tool_step(s) and (s.tool_name or s.name) == row["name"] and step_error(s)
                   for s in t.steps)
        ]  # fmt: skip
    elif row["signal"] == "trace_error_rate":
        picked = [t.trace_id for t in cur if t.status == "error"]
    elif row["signal"] == "loop_rate":
        picked = [t.trace_id for t in cur if t.has_loop]
    else:
        key = {"latency_s": latencies, "tokens_per_trace": token_counts,
               "cost_per_trace": costs}.get(row["signal"], step_counts)  # fmt: skip
        ordered = sorted(cur, key=lambda t: float(np.sum(key([t]))), reverse=True)
        picked = [t.trace_id for t in ordered]
    return picked[:5]
