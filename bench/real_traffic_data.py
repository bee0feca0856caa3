"""Make the compact τ-bench file that bench/real_traffic.py replays (and the suite reads).

    python bench/real_traffic_data.py SRC.json tests/data/tau_bench/gpt-4o-airline.json.gz

SRC is ``historical_trajectories/gpt-4o-airline.json`` of sierra-research/tau-bench (MIT,
LICENSE beside the output). Each trajectory keeps its task, trial and reward and, per
message, the role, the tool calls requested (name and arguments), the tool result's
name and whether it is an error (τ-bench tool results that failed start with "Error"),
and the text cut to 240 characters: enough for the spans' content, input identity and
lengths, at ~1/10 of the original's 4 MB. The system prompt (the airline policy, the same
in every trajectory) is kept once.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

TEXT = 240


def compact_message(message: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message["role"]}
    content = message.get("content")
    if isinstance(content, str) and content:
        out["text"] = content[:TEXT]
        out["chars"] = len(content)
    if message["role"] == "tool":
        out["name"] = message.get("name", "")
        out["error"] = isinstance(content, str) and content.startswith("Error")
    calls = message.get("tool_calls") or []
    if calls:
        out["calls"] = [
            {"name": c["function"]["name"], "arguments": c["function"]["arguments"][:TEXT]}
            for c in calls
        ]
    return out


def compact(trajectories: list[dict[str, Any]]) -> dict[str, Any]:
    system = next(m["content"] for m in trajectories[0]["traj"] if m["role"] == "system")
    return {
        "source": "sierra-research/tau-bench historical_trajectories/gpt-4o-airline.json (MIT)",
        "system_prompt": system[:2000],
        "trajectories": [
            {
                "task_id": t["task_id"],
                "trial": t["trial"],
                "reward": t["reward"],
                "messages": [compact_message(m) for m in t["traj"] if m["role"] != "system"],
            }
            for t in trajectories
        ],
    }


def main() -> None:
    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    data = compact(json.loads(source.read_text()))
    target.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(target, "wt", encoding="utf-8", compresslevel=9) as f:
        json.dump(data, f, separators=(",", ":"))
    print(f"{len(data['trajectories'])} trajectories -> {target} ({target.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
