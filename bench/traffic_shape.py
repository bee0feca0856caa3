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
from datetime import UTC, datetime, timedelta

from bench.real_traffic import load_trajectories
from detectors.records import Step, TraceRecord
from pipelines.scenarios import events_to_records, generate_workload
from pipelines.scenarios.shape import traffic_shape


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = {
        "real_tau_bench_airline_gpt4o": traffic_shape(real_records()),
        "generator_default": traffic_shape(generated_records(args.hours, args.seed)),
        "generator_hours": args.hours,
        "seed": args.seed,
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
