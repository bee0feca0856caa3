"""Tool steps from the calls an LLM step *requested*, for traces that have no tool spans.

Plain client instrumentations record only LLM calls; the tools the model asked for are in
each LLM span's attribute ``telltale.tool_calls.requested`` (``[{id, name, arguments}]``,
written by the OTLP receiver from the output messages) and what each tool answered in a
later LLM span's ``telltale.tool_calls.results`` (``[{id, outcome}]``). When no step of a
trace is a tool step, each requested call becomes a tool step right after the LLM step that
asked for it, marked ``requested`` in its attributes, with the outcome of the result whose
``id`` matches (any LLM span of the trace, whichever arrived first): ``error`` makes it a
failed step (``error_type`` ``tool_result_error``), ``ok`` a passed one, no result seen
``unknown`` (counted as passed). A trace with a real tool span keeps only those.

>>> llm = {"span_id": "l1", "kind": "llm", "attributes": {
...     "telltale.tool_calls.requested": [{"id": "c1", "name": "lookup_order", "arguments": "{}"}]}}
>>> nxt = {"span_id": "l2", "kind": "llm", "attributes": {
...     "telltale.tool_calls.results": [{"id": "c1", "outcome": "error"}]}}
>>> [(r["kind"], r.get("tool_name"), r.get("status")) for r in with_requested_calls([llm, nxt])]
[('llm', None, None), ('tool', 'lookup_order', 'error'), ('llm', None, None)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

REQUESTED = "telltale.tool_calls.requested"
RESULTS = "telltale.tool_calls.results"
RESULT_ERROR = "tool_result_error"

Row = Mapping[str, Any]


def _attrs(row: Row) -> Mapping[str, Any]:
    attrs = row.get("attributes")
    return attrs if isinstance(attrs, Mapping) else {}


def _entries(row: Row, key: str) -> list[Mapping[str, Any]]:
    value = _attrs(row).get(key)
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, Mapping)]


def _is_tool(row: Row) -> bool:
    return row.get("kind") == "tool" or bool(row.get("tool_name"))


def with_requested_calls(steps: Sequence[Row]) -> list[Row]:
    """``steps`` with a tool step after each LLM step's requested calls (rules above)."""
    if any(_is_tool(s) for s in steps) or not any(_entries(s, REQUESTED) for s in steps):
        return list(steps)
    outcomes: dict[str, str] = {}
    for s in steps:
        for result in _entries(s, RESULTS):
            if result.get("id") is not None and result.get("outcome") in ("ok", "error"):
                outcome = str(result["outcome"])
                # An id answered twice counts as an error if either answer was one.
                if outcomes.get(str(result["id"])) != "error":
                    outcomes[str(result["id"])] = outcome
    out: list[Row] = []
    for s in steps:
        out.append(s)
        for i, call in enumerate(_entries(s, REQUESTED)):
            name = call.get("name")
            if not isinstance(name, str) or not name:
                continue
            call_id = call.get("id")
            outcome = outcomes.get(str(call_id), "unknown") if call_id is not None else "unknown"
            out.append(
                {
                    "trace_id": s.get("trace_id"),
                    "span_id": f"{s.get('span_id')}:call:{i}",
                    "parent_span_id": s.get("span_id"),
                    "kind": "tool",
                    "name": name,
                    "tool_name": name,
                    "status": "error" if outcome == "error" else "ok",
                    "error_type": RESULT_ERROR if outcome == "error" else None,
                    "started_at": s.get("ended_at"),
                    "ended_at": None,
                    "step_index": None,
                    "confidence": None,
                    "attributes": {
                        "requested": True,
                        "outcome": outcome,
                        "tool_call.id": call_id,
                        "tool_call.arguments": call.get("arguments"),
                    },
                }
            )
    return out
