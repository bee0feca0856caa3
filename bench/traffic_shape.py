"""How the scenario generator's traffic compares with real agent trajectories. Prints JSON.

The detection and alerting benches run on the generator; if its traces fail where real
agents never do, they reward detectors that real traffic cannot feed (FM-1 read model
steps that failed, FM-2 the step right after a failed tool, which in real agents is a
model reply that never fails). This measures, on both, what the step-level detectors
read: steps and tool calls per trace, how often tool calls and other steps fail, what
follows a failed tool call (the next step, the next tool call), and task success.

Real: τ-bench's gpt-4o airline trajectories (tests/data/tau_bench, MIT), read as
bench/real_traffic.py replays them (a chat step per assistant message, a tool step per
tool result, failed when the result is an error).

    .venv/bin/python -m bench.traffic_shape [--hours 24] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from bench.real_traffic import load_trajectories
from detectors.records import Step, TraceRecord, is_tool_step, step_error
from pipelines.scenarios import events_to_records, generate_workload


def real_records() -> list[TraceRecord]:
    """τ-bench trajectories as the steps the detectors read."""
    out = []
    for i, t in enumerate(load_trajectories()["trajectories"]):
        steps: list[Step] = []
        for m in t["messages"]:
            if m["role"] == "assistant":
                steps.append(Step(len(steps), "llm", "chat"))
            elif m["role"] == "tool":
                status = "error" if m.get("error") else "ok"
                steps.append(Step(len(steps), "tool", "execute_tool", status, m.get("name")))
        status = "ok" if t["reward"] >= 1.0 else "error"
        out.append(TraceRecord(f"real{i}", "airline", steps=tuple(steps), status=status))
    return out


def generated_records(hours: float, seed: int) -> list[TraceRecord]:
    start = datetime(2026, 1, 5, tzinfo=UTC)
    events = generate_workload(
        seed, start, timedelta(hours=hours), traces_per_hour=80.0, include_embeddings=False
    )
    return [r for r in events_to_records(events) if r.source == "production"]


def _quantiles(values: Sequence[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=float)
    return {"mean": round(float(a.mean()), 2), "p50": float(np.median(a)),
            "p90": float(np.quantile(a, 0.9))}  # fmt: skip


def _rate(hits: int, n: int) -> float | None:
    return round(hits / n, 4) if n else None


def shape(records: Iterable[TraceRecord]) -> dict[str, Any]:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = {
        "real_tau_bench_airline_gpt4o": shape(real_records()),
        "generator_default": shape(generated_records(args.hours, args.seed)),
        "generator_hours": args.hours,
        "seed": args.seed,
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
