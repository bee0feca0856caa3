"""Tool steps from requested calls: only without tool spans, outcome by call id."""

from __future__ import annotations

from typing import Any

from detectors.records import from_rows, is_tool_step, step_error
from detectors.requested_tools import REQUESTED, RESULT_ERROR, RESULTS


def llm(span_id: str, start: float, **attrs: Any) -> dict[str, Any]:
    return {
        "trace_id": "t",
        "span_id": span_id,
        "parent_span_id": "root",
        "kind": "llm",
        "started_at": start,
        "ended_at": start + 1,
        "attributes": attrs,
    }


def steps(*spans: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    root = {"trace_id": "t", "span_id": "root", "kind": "agent", "started_at": 0.0}
    (rec,) = from_rows([{"trace_id": "t", "agent": "a"}], [root, *spans])
    return [(s.kind, s.tool_name, s.status) for s in rec.steps]


CALLS = [{"id": "c1", "name": "get_weather"}, {"id": "c2", "name": "lookup_order"}]


def test_outcomes_from_any_llm_span_whatever_the_order() -> None:
    first = llm("l1", 1.0, **{REQUESTED: CALLS})
    second = llm(
        "l2", 5.0, **{RESULTS: [{"id": "c2", "outcome": "error"}, {"id": "c1", "outcome": "ok"}]}
    )
    # The results' span listed first: the order rows arrive in does not matter.
    assert steps(second, first) == [
        ("llm", None, "ok"),
        ("tool", "get_weather", "ok"),
        ("tool", "lookup_order", "error"),
        ("llm", None, "ok"),
    ]
    root = {"trace_id": "t", "span_id": "root", "kind": "agent", "started_at": 0.0}
    (rec,) = from_rows([{"trace_id": "t", "agent": "a"}], [root, first, second])
    failed = [s for s in rec.steps if step_error(s)]
    assert [(s.index, s.error_type) for s in failed] == [(2, RESULT_ERROR)]
    assert all(is_tool_step(s) and s.attributes["requested"] for s in rec.steps[1:3])


def test_no_result_is_unknown_and_not_an_error() -> None:
    got = steps(llm("l1", 1.0, **{REQUESTED: [{"id": None, "name": "search"}]}))
    assert got == [("llm", None, "ok"), ("tool", "search", "ok")]


def test_a_trace_with_tool_spans_keeps_only_those() -> None:
    tool = {
        "trace_id": "t",
        "span_id": "x",
        "parent_span_id": "root",
        "kind": "tool",
        "tool_name": "get_weather",
        "started_at": 2.0,
    }
    assert steps(llm("l1", 1.0, **{REQUESTED: CALLS}), tool) == [
        ("llm", None, "ok"),
        ("tool", "get_weather", "ok"),
    ]


def test_bad_values_are_ignored() -> None:
    bad = llm("l1", 1.0, **{REQUESTED: ["x", {"name": ""}, {"id": "c", "name": 3}], RESULTS: "no"})
    assert steps(bad) == [("llm", None, "ok")]
    assert steps(llm("l2", 1.0, **{REQUESTED: {"id": "c"}})) == [("llm", None, "ok")]
