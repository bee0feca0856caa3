"""The graph's nodes from sampled paths (no database): the busiest kept, the rest merged into
``other``, rollup counts laid over tool and model nodes, examples failed-first."""

from __future__ import annotations

from app.agents import graph
from app.agents.paths import END, START, PathStep


def _path(*steps: tuple[str, bool]) -> list[PathStep]:
    out = [PathStep(START, "start", START)]
    for node, failed in steps:
        kind, _, name = node.partition(":")
        out.append(PathStep(node, kind, name, failed))
    return [*out, PathStep(END, "end", END)]


def test_busiest_nodes_kept_the_rest_merged_and_rollups_laid_over(monkeypatch) -> None:
    monkeypatch.setattr(graph, "MAX_NODES", 2)
    paths = [
        ("t1", _path(("llm:m", False), ("tool:a", False), ("tool:a", True), ("tool:rare", False))),
        ("t2", _path(("llm:m", False), ("tool:a", True), ("step:x", False))),
    ]
    nodes, edges, with_edge = graph._nodes_and_edges(paths)
    assert edges[("tool:a", "tool:a")] == 1 and with_edge[("llm:m", "tool:a")] == 2
    exact = {"tool:a": (100, 7)}
    ids_of = graph._keep(nodes)
    assert ids_of["tool:rare"] == ids_of["step:x"] == graph.OTHER and ids_of["tool:a"] == "tool:a"
    drawn = {n.id: n for n in graph._merged(nodes, exact, ids_of)}
    a, m, other = drawn["tool:a"], drawn["llm:m"], drawn[graph.OTHER]
    assert (a.calls, a.errors, a.counted, a.sampled_calls) == (100, 7, "range", 3)
    assert a.examples == ["t1", "t2"]  # both failed a call of it
    assert (m.calls, m.counted) == (2, "sample")  # no rollup: the sample's count, said so
    assert (other.name, other.calls, other.counted) == ("other steps", 2, "sample")
    assert [n.id for n in drawn.values()][0] == START and drawn[END].examples == []
