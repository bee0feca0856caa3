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

Every question is answered from one walk of the tree, so the cost is O(n log n) in the
spans whatever the tree's shape: a span asking "is a failed step below me?" of its whole
subtree made a 12,000-span chain of failing steps quadratic (minutes of derive time for
every project). Below a span means inside its interval of a depth-first numbering, and
the failed steps' numbers are kept sorted per error type, so each question is a binary
search. Bad data with a parent cycle has no root: the first span of the cycle met in the
given order is read as a root.

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

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

WRAPPER_KINDS = frozenset({"agent", "chain"})
UNCLASSIFIED = "step"

Row = Mapping[str, Any]


def agent_steps(spans: Sequence[Row]) -> list[tuple[Row, bool]]:
    """``(span, error_inherited)`` for each span that is a step, in the given order."""
    if not any(s.get("parent_span_id") for s in spans):
        return [(s, False) for s in spans]
    tree = _Tree(spans)
    steps = [i for i in range(len(spans)) if tree.is_step(i)]
    failed_below = _FailedSteps(tree, [i for i in steps if _failed(spans[i])])
    return [(spans[i], _failed(spans[i]) and failed_below.under(i)) for i in steps]


def _kind(s: Row) -> str:
    return str(s.get("kind") or UNCLASSIFIED)


def _failed(s: Row) -> bool:
    return s.get("status") == "error"


class _Tree:
    """The spans as a tree of indices: parent, children, depth-first numbering, and
    whether an action sits above each span, all from one iterative walk."""

    def __init__(self, spans: Sequence[Row]) -> None:
        self.spans = spans
        n = len(spans)
        by_id = {str(s["span_id"]): i for i, s in enumerate(spans) if s.get("span_id") is not None}
        self.parent = [-1] * n
        self.children: list[list[int]] = [[] for _ in range(n)]
        for i, s in enumerate(spans):
            p = by_id.get(str(s.get("parent_span_id")), -1)
            if p != i and s.get("parent_span_id") is not None and p >= 0:
                self.parent[i] = p
                self.children[p].append(i)
        self.action = [self._is_action(i) for i in range(n)]
        # kinds of the action children of each span: "an outer layer of the same action"
        self.action_child_kinds = [
            {_kind(spans[c]) for c in self.children[i] if self.action[c]} for i in range(n)
        ]
        self.first = [-1] * n  # depth-first number of the span
        self.last = [-1] * n  # largest number inside its subtree
        self.action_above = [False] * n
        self._number()

    def _is_action(self, i: int) -> bool:
        kind = _kind(self.spans[i])
        return kind not in WRAPPER_KINDS and not (kind == UNCLASSIFIED and self.children[i])

    def _number(self) -> None:
        roots = [i for i in range(len(self.spans)) if self.parent[i] < 0]
        counter = 0
        # roots first, then whatever a parent cycle left unreached, in the given order
        for start in roots + list(range(len(self.spans))):
            if self.first[start] >= 0:
                continue
            stack: list[tuple[int, bool]] = [(start, False)]
            while stack:
                i, leaving = stack.pop()
                if leaving:
                    self.last[i] = counter - 1
                    continue
                if self.first[i] >= 0:  # reached twice: only through a cycle
                    continue
                self.first[i] = counter
                counter += 1
                p = self.parent[i]
                if i != start and p >= 0:
                    self.action_above[i] = self.action[p] or self.action_above[p]
                stack.append((i, True))
                stack.extend((c, False) for c in reversed(self.children[i]))

    def is_step(self, i: int) -> bool:
        if not self.action[i]:
            return False
        kind = _kind(self.spans[i])
        if kind in self.action_child_kinds[i]:
            return False
        return not (kind == UNCLASSIFIED and self.action_above[i])


class _FailedSteps:
    """Failed steps by depth-first number, per error type, for "a failed step below"."""

    def __init__(self, tree: _Tree, failed: list[int]) -> None:
        self.tree = tree
        self.all = sorted(tree.first[i] for i in failed)
        self.by_type: dict[Any, list[int]] = {}
        for i in failed:
            self.by_type.setdefault(tree.spans[i].get("error_type"), []).append(tree.first[i])
        for numbers in self.by_type.values():
            numbers.sort()

    def under(self, i: int) -> bool:
        """A failed step strictly below ``i`` with the same error type, or either without one."""
        lo, hi = self.tree.first[i], self.tree.last[i]
        error = self.tree.spans[i].get("error_type")
        if error is None:
            return _any_in(self.all, lo, hi)
        return _any_in(self.by_type.get(None, []), lo, hi) or _any_in(
            self.by_type.get(error, []), lo, hi
        )


def _any_in(sorted_numbers: list[int], lo: int, hi: int) -> bool:
    """Whether a number lies in ``(lo, hi]``."""
    k = bisect_right(sorted_numbers, lo)
    return k < len(sorted_numbers) and sorted_numbers[k] <= hi
