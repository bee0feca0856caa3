"""Which spans of a trace are the agent's steps: its actions, not the spans around them.

A trace keeps its span tree; the steps the detectors count are the actions (LLM calls,
tool executions, retrievals, plans, ...). Read from the tree (``span_id`` /
``parent_span_id``), a span is **not** a step when it is

* a *wrapper*: kind ``agent`` or ``chain`` (OpenInference AGENT / CHAIN, OTel GenAI
  ``invoke_agent``, OpenLLMetry ``workflow``), or an unclassified span (kind ``step``)
  with children (OpenLLMetry ``task``, a server span, a user's function span);
* an outer layer of the same action: an action with a child action of its own kind (a
  framework's LLM span around the provider library's LLM span for the same call);
* the inside of an action: an unclassified span below one (the HTTP client span of an LLM
  call, OpenLIT's ``httpx`` POST).

A step's error is its own: a failed step with a failed step below it (same ``error_type``,
or either without one) failed because its child raised, and is read as ``ok``. Without
parent ids (flat, natively ingested traces) every span is a step, as before.

Examples
--------
>>> spans = [
...     {"span_id": "a", "parent_span_id": None, "kind": "agent", "status": "error"},
...     {"span_id": "c", "parent_span_id": "a", "kind": "chain", "status": "error"},
...     {"span_id": "t", "parent_span_id": "c", "kind": "tool", "status": "error"},
...     {"span_id": "l", "parent_span_id": "a", "kind": "llm"},
...     {"span_id": "h", "parent_span_id": "l", "kind": "step", "name": "POST"},
... ]
>>> [(s["span_id"], inherited) for s, inherited in agent_steps(spans)]
[('t', False), ('l', False)]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

WRAPPER_KINDS = frozenset({"agent", "chain"})
UNCLASSIFIED = "step"

Row = Mapping[str, Any]


def agent_steps(spans: Sequence[Row]) -> list[tuple[Row, bool]]:
    """``(span, error_inherited)`` for each span that is a step, in the given order."""
    if not any(s.get("parent_span_id") for s in spans):
        return [(s, False) for s in spans]
    by_id = {str(s["span_id"]): s for s in spans if s.get("span_id") is not None}
    children: dict[str, list[Row]] = {}
    for s in spans:
        parent = s.get("parent_span_id")
        if parent is not None and str(parent) in by_id:
            children.setdefault(str(parent), []).append(s)
    tree = _Tree(by_id, children)
    steps = [s for s in spans if tree.is_step(s)]
    step_ids = {id(s) for s in steps}
    return [(s, _failed(s) and tree.failed_below(s, step_ids)) for s in steps]


def _kind(s: Row) -> str:
    return str(s.get("kind") or UNCLASSIFIED)


def _failed(s: Row) -> bool:
    return s.get("status") == "error"


class _Tree:
    def __init__(self, by_id: dict[str, Row], children: dict[str, list[Row]]) -> None:
        self.by_id, self.children = by_id, children

    def kids(self, s: Row) -> list[Row]:
        return self.children.get(str(s.get("span_id")), [])

    def is_action(self, s: Row) -> bool:
        kind = _kind(s)
        return kind not in WRAPPER_KINDS and not (kind == UNCLASSIFIED and self.kids(s))

    def is_step(self, s: Row) -> bool:
        if not self.is_action(s):
            return False
        kind = _kind(s)
        if any(_kind(c) == kind and self.is_action(c) for c in self.kids(s)):
            return False
        return not (kind == UNCLASSIFIED and any(self.is_action(a) for a in self.ancestors(s)))

    def ancestors(self, s: Row) -> Iterator[Row]:
        seen = {id(s)}
        parent = self.by_id.get(str(s.get("parent_span_id")))
        while parent is not None and id(parent) not in seen:  # a cycle in bad data ends it
            seen.add(id(parent))
            yield parent
            parent = self.by_id.get(str(parent.get("parent_span_id")))

    def failed_below(self, s: Row, step_ids: set[int]) -> bool:
        error = s.get("error_type")
        stack, seen = list(self.kids(s)), {id(s)}
        while stack:
            c = stack.pop()
            if id(c) in seen:
                continue
            seen.add(id(c))
            if id(c) in step_ids and _failed(c):
                other = c.get("error_type")
                if error is None or other is None or other == error:
                    return True
            stack.extend(self.kids(c))
        return False
