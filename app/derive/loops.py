"""Tool loops: the same tool called with the same arguments over and over in one trace.

An agent that repeats a call unchanged is stuck (openlit ships "same tool + same arguments
≥ 3"); FM-2 sees it only as a rate. Per trace, from its tool spans in step order:

- a call is its tool's name and its arguments (the first of :data:`TOOL_INPUT` given),
  normalised: JSON re-written with sorted keys and no spaces, other text with its
  whitespace collapsed, so arguments that differ by whitespace only are the same; a call
  whose span carries no arguments is compared with none (it cannot be shown the same);
- the *longest run* is the call made most often (anywhere in the trace, as the
  ``repeated_tool_call`` check counts: an agent alternating two calls loops too);
- it is a **loop** when made 3 times or more, or made again unchanged after it failed
  (2 identical calls, an earlier one failed: a retry that cannot succeed);
- a loop *wasted* its repeats (calls beyond the first) and the LLM calls between its first
  and its last call (those that decided the repeats): their input and output tokens and
  their cost (as sent, else as priced by the derive job), counted where they have any.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.derive.conversation import TOOL_INPUT

MIN_CALLS = 3  # identical calls that make a loop
MIN_CALLS_AFTER_FAILURE = 2  # identical calls that make a loop once one of them failed
_MAX_TOOL = 128  # traces.loop_tool


@dataclass(frozen=True)
class ToolLoop:
    """The longest run of one trace: ``tool`` is None when it is no loop."""

    calls: int  # identical calls in the longest run; 0 without tool calls
    tool: str | None = None
    wasted_calls: int = 0
    wasted_tokens: int | None = None
    wasted_cost: float | None = None

    def sentence(self) -> str | None:
        if self.tool is None:
            return None
        return f"{self.tool} called {self.calls} times with the same arguments"


def normalised_arguments(value: Any) -> str:
    """The arguments as compared: JSON canonical, else whitespace collapsed.

    >>> normalised_arguments('{"id": 7,  "b": [1, 2]}') == normalised_arguments('{"b":[1,2],"id":7}')
    True
    >>> normalised_arguments("  order 7\\n")
    'order 7'
    """
    if value is None:
        return ""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return " ".join(value.split())
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return " ".join(str(value).split())


def _arguments(span: Mapping[str, Any]) -> str | None:
    """The span's normalised arguments; None where it carries none (an instrumentation
    that does not record them, or content capture off)."""
    attrs = span.get("attributes") or {}
    found = next((attrs[k] for k in TOOL_INPUT if attrs.get(k) is not None), None)
    return None if found is None else normalised_arguments(found)


def tool_loop(
    ordered: Sequence[Mapping[str, Any]], priced: Mapping[str, float] | None = None
) -> ToolLoop:
    """The longest run of identical tool calls in ``ordered`` (spans in step order), and
    whether it is a loop; ``priced``: the costs (by span id) of LLM calls sent without one."""
    priced = priced or {}
    positions: dict[tuple[str, str], list[int]] = {}
    failed_before_repeat: set[tuple[str, str]] = set()
    for i, s in enumerate(ordered):
        if s.get("kind") != "tool":
            continue
        args = _arguments(s)
        if args is None:
            # Unknown arguments are no evidence of a repeat: three lookups of different
            # reservations, sent without their arguments, are not one call made thrice.
            continue
        key = (str(s.get("tool_name") or s.get("name") or ""), args)
        seen = positions.setdefault(key, [])
        if seen and any(ordered[j].get("status") == "error" for j in seen):
            failed_before_repeat.add(key)
        seen.append(i)
    if not positions:
        return ToolLoop(calls=0)
    # Most calls first; a tie goes to the run that started first.
    key, at = max(positions.items(), key=lambda kv: (len(kv[1]), -kv[1][0]))
    looping = [k for k, p in positions.items() if _is_loop(k, p, failed_before_repeat)]
    if not looping:
        return ToolLoop(calls=len(at))
    if key not in looping:  # a shorter run that failed and repeated is the loop to show
        key = max(looping, key=lambda k: (len(positions[k]), -positions[k][0]))
        at = positions[key]
    between = [s for s in ordered[at[0] + 1 : at[-1]] if s.get("kind") == "llm"]
    tokens = [
        int(s.get("input_tokens") or 0) + int(s.get("output_tokens") or 0)
        for s in between
        if s.get("input_tokens") is not None or s.get("output_tokens") is not None
    ]
    costs = [
        float(c)
        for s in between
        if (c := s.get("cost") if s.get("cost") is not None else priced.get(s["span_id"]))
        is not None
    ]
    return ToolLoop(
        calls=len(at),
        tool=key[0][:_MAX_TOOL] or "(unnamed tool)",
        wasted_calls=len(at) - 1,
        wasted_tokens=sum(tokens) if tokens else None,
        wasted_cost=round(sum(costs), 8) if costs else None,
    )


def _is_loop(key: tuple[str, str], at: list[int], failed: set[tuple[str, str]]) -> bool:
    return len(at) >= MIN_CALLS or (len(at) >= MIN_CALLS_AFTER_FAILURE and key in failed)
