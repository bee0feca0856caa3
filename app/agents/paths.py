"""A trace's path through its agent's graph: its steps in order, as graph nodes.

A node is what a step does: a tool (tool and retrieval steps, named as the tool rollups
name them: the tool's name, else the span's), a model (an LLM step, by the model that
answered, else the one asked, else the span's name: the model rollups count a call without
a model under no name, so such a node's calls come from the sample) or another step (by
kind and name). A **sub-agent** is an
``agent`` span below another one (OTel ``invoke_agent`` inside an agent, OpenInference
AGENT inside AGENT): it is a node too, entered when a step's nearest enclosing agent span
becomes it. Steps are the agent's actions (:func:`detectors.agent_steps.agent_steps`, the
monitors' reading), in step order; a step's error is its own. Each path runs from
:data:`START` to :data:`END`, so first and last steps show as edges too, and a tool called
twice in a row is a self-edge: the loop the graph makes visible.

>>> spans = [
...     {"span_id": "r", "parent_span_id": None, "kind": "agent", "name": "shop"},
...     {"span_id": "l", "parent_span_id": "r", "kind": "llm", "response_model": "gpt-4o", "step_index": 0},
...     {"span_id": "s", "parent_span_id": "r", "kind": "agent", "name": "search-agent", "step_index": 1},
...     {"span_id": "t1", "parent_span_id": "s", "kind": "tool", "tool_name": "web", "step_index": 2},
...     {"span_id": "t2", "parent_span_id": "s", "kind": "tool", "tool_name": "web", "step_index": 3,
...      "status": "error"},
... ]
>>> [(p.node, p.failed) for p in trace_path(spans)]  # doctest: +NORMALIZE_WHITESPACE
[('start', False), ('llm:gpt-4o', False), ('agent:search-agent', False), ('tool:web', False),
 ('tool:web', True), ('end', False)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from detectors.agent_steps import agent_steps
from detectors.records import TOOL_KINDS
from detectors.stored_times import step_order_key

START, END = "start", "end"


@dataclass(frozen=True)
class PathStep:
    node: str  # "<kind>:<name>", or START / END
    kind: str  # tool | llm | agent | <a step's kind> | start | end
    name: str
    failed: bool = False


def _node(s: Mapping[str, Any], inherited: bool) -> PathStep:
    kind = str(s.get("kind") or "step")
    failed = (s.get("status") == "error" or s.get("error_type") is not None) and not inherited
    if kind in TOOL_KINDS or s.get("tool_name"):
        name = str(s.get("tool_name") or s.get("name") or "")
        return PathStep(f"tool:{name}", "tool", name, failed)
    if kind == "llm":
        name = str(s.get("response_model") or s.get("request_model") or s.get("name") or "")
        return PathStep(f"llm:{name}", "llm", name, failed)
    name = str(s.get("name") or "")
    return PathStep(f"{kind}:{name}", kind, name, failed)


def trace_path(spans: Sequence[Mapping[str, Any]]) -> list[PathStep]:
    """The trace's nodes in step order, between START and END."""
    ordered = sorted(spans, key=step_order_key)
    by_id = {str(s["span_id"]): s for s in ordered if s.get("span_id") is not None}

    def enclosing_agent(s: Mapping[str, Any]) -> Mapping[str, Any] | None:
        seen = set()
        parent = s.get("parent_span_id")
        while parent is not None and parent in by_id and parent not in seen:
            seen.add(parent)
            p = by_id[parent]
            if p.get("kind") == "agent":
                return p
            parent = p.get("parent_span_id")
        return None

    path = [PathStep(START, "start", START)]
    inside: Mapping[str, Any] | None = None
    for s, inherited in agent_steps(ordered):
        owner = enclosing_agent(s)
        if owner is not None and owner is not inside and enclosing_agent(owner) is not None:
            name = str(owner.get("name") or "")
            path.append(PathStep(f"agent:{name}", "agent", name, owner.get("status") == "error"))
        inside = owner
        path.append(_node(s, inherited))
    path.append(PathStep(END, "end", END))
    return path
