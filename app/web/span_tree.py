"""Each span's depth under its parent, for the trace page's indented waterfall.

A parent chain is as deep as the agent made it (a probe sent 1,500 levels, past Python's
recursion limit), so the walk is a loop: from each span up to the first ancestor whose
depth is known, then back down the path, so every span is visited once (linear in the
spans). The template renders the spans as a flat list with this depth (no recursive
loop in Jinja, which would recurse in Python too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def span_depths(spans: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """``{span_id: depth}``: 0 for a span whose parent is not in the trace, else one more
    than its parent's. In a parent cycle (bad data) the span the walk meets again is a root.

    >>> span_depths([{"span_id": "c", "parent_span_id": "b"},
    ...              {"span_id": "b", "parent_span_id": "a"}, {"span_id": "a"}])
    {'a': 0, 'b': 1, 'c': 2}
    """
    parent_of = {str(s["span_id"]): s.get("parent_span_id") or "" for s in spans}
    depth: dict[str, int] = {}
    for start in parent_of:
        path: list[str] = []
        on_path: set[str] = set()
        sid = start
        while sid not in depth:
            path.append(sid)
            on_path.add(sid)
            parent = parent_of[sid]
            if parent not in parent_of or parent in on_path:
                depth[sid] = 0  # a root, or the span that closes a cycle
                path.pop()
                break
            sid = parent
        below = depth[sid]
        for sid in reversed(path):
            below += 1
            depth[sid] = below
    return depth
