"""Make the compact trajectory files that bench/real_traffic.py replays (and the suite reads).

    python bench/real_traffic_data.py SRC.json tests/data/tau_bench/gpt-4o-airline.json.gz
    python bench/real_traffic_data.py --who-and-when 'DIR/Who&When/Algorithm-Generated' \
        tests/data/who_and_when/algorithm-generated.json.gz

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
import re
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


CODE = re.compile(r"```(?:python|sh|bash)?\n(.*?)```", re.S)


def who_and_when_messages(log: dict[str, Any]) -> list[dict[str, Any]]:
    """One Who&When log as τ-bench-shaped messages: the question as the user's message,
    each expert's turn as an assistant message, each ``Computer_terminal`` turn as the
    result of a ``python`` tool call that the turn before it requested (its code block),
    an error when the exit code is not 0."""
    out: list[dict[str, Any]] = [{"role": "user", "text": log["question"][:TEXT],
                                  "chars": len(log["question"])}]  # fmt: skip
    said = ""  # the last expert turn in full (its code block is past the cut)
    for message in log["history"]:
        content = str(message.get("content") or "")
        if message.get("name") == "Computer_terminal":
            if out[-1]["role"] == "assistant" and not out[-1].get("calls"):
                code = CODE.search(said + "```")
                out[-1]["calls"] = [{"name": "python",
                                     "arguments": (code.group(1) if code else "")[:TEXT]}]  # fmt: skip
            failed = not content.startswith("exitcode: 0")
            out.append({"role": "tool", "name": "python", "text": content[:TEXT],
                        "chars": len(content), "error": failed})  # fmt: skip
        else:
            said = content
            out.append({"role": "assistant", "text": content[:TEXT], "chars": len(content)})
    return out


def compact_who_and_when(folder: Path) -> dict[str, Any]:
    logs = sorted(folder.glob("*.json"), key=lambda p: int(p.stem))
    trajectories = []
    for k, path in enumerate(logs):
        log = json.loads(path.read_text())
        trajectories.append({
            "task_id": k, "trial": 0, "reward": 1.0 if log.get("is_correct") else 0.0,
            "question_id": log.get("question_ID"), "messages": who_and_when_messages(log),
        })  # fmt: skip
    return {
        "source": "ag2ai/Agents_Failure_Attribution Who&When/Algorithm-Generated (MIT)",
        "system_prompt": "",
        "trajectories": trajectories,
    }


def main() -> None:
    if sys.argv[1] == "--who-and-when":
        source, target = Path(sys.argv[2]), Path(sys.argv[3])
        data = compact_who_and_when(source)
    else:
        source, target = Path(sys.argv[1]), Path(sys.argv[2])
        data = compact(json.loads(source.read_text()))
    target.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(target, "wt", encoding="utf-8", compresslevel=9) as f:
        json.dump(data, f, separators=(",", ":"))
    print(f"{len(data['trajectories'])} trajectories -> {target} ({target.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
