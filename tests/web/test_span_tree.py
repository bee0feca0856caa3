"""Each span's depth under its parent, for the trace page's indentation: linear in the
spans and without recursion, whatever the chain's depth; bad data (cycles, missing
parents) cannot loop."""

from __future__ import annotations

from app.web.span_tree import span_depths


def _chain(n: int) -> list[dict[str, str | None]]:
    return [{"span_id": f"s{i}", "parent_span_id": f"s{i - 1}" if i else None} for i in range(n)]


def test_a_chain_deeper_than_the_recursion_limit() -> None:
    spans = _chain(100_000)
    depths = span_depths(spans[::-1])  # leaves first: the worst order for a memo
    assert depths["s0"] == 0 and depths["s99999"] == 99_999


def test_missing_parents_are_roots_and_cycles_end() -> None:
    spans = [
        {"span_id": "a", "parent_span_id": "gone"},
        {"span_id": "b", "parent_span_id": "a"},
        {"span_id": "x", "parent_span_id": "y"},
        {"span_id": "y", "parent_span_id": "x"},
        {"span_id": "z", "parent_span_id": "y"},
        {"span_id": "self", "parent_span_id": "self"},
    ]
    depths = span_depths(spans)
    assert depths == {"a": 0, "b": 1, "x": 1, "y": 0, "z": 1, "self": 0}
