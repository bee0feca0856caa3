"""An agent's graph over a range (issue #52, item 6): its tools, models and sub-agents as
nodes, the transitions between consecutive steps as edges.

Node counts for tools and models are the rollups' (every call in the range); no rollup
holds the order of steps, so the edges (and the counts of sub-agents and other steps) are
read from the spans of a **bounded sample**: the range is cut into :data:`SLICES` equal
slices and the first :data:`PER_SLICE` production traces of each are read (an index seek on
``(project_id, agent, started_at)`` per slice), so the sample covers the whole range, never
just its newest traces, and costs the same at any traffic. The answer says so
(``sample``). Paths are :func:`app.agents.paths.trace_path`; the busiest
:data:`MAX_NODES` nodes are kept and the rest join one ``other`` node.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.agents.paths import END, START, PathStep, trace_path
from app.agents.ranges import Window
from app.agents.read import Scope, trace_sums
from app.agents.schemas import AgentGraph, GraphEdge, GraphNode
from app.db import one_of
from app.models import ModelRollup, Span, ToolRollup, Trace

SLICES, PER_SLICE = 30, 10
MAX_NODES = 24
EXAMPLES = 3  # sampled traces a node names, those where it failed first
OTHER = "other:"
_SPAN_SLACK = timedelta(days=1)  # as the rollup build: spans start near their trace
_SPAN_COLUMNS = (Span.trace_id, Span.span_id, Span.parent_span_id, Span.step_index, Span.kind,
                 Span.name, Span.tool_name, Span.status, Span.error_type, Span.started_at,
                 Span.response_model, Span.request_model)  # fmt: skip


def sample_ids(session: Session, *, project_id: int, agent: str, win: Window) -> list[str]:
    """The first traces of each slice of the range (see the module's notes)."""
    width = (win.end - win.start) / SLICES
    out: list[str] = []
    for i in range(SLICES):
        lo = win.start_at + timedelta(seconds=i * width)
        hi = win.start_at + timedelta(seconds=(i + 1) * width)
        out += session.scalars(
            select(Trace.trace_id)
            .where(Trace.project_id == project_id, Trace.agent == agent,
                   Trace.started_at >= lo, Trace.started_at < hi, Trace.source == "production")
            .order_by(Trace.started_at).limit(PER_SLICE)
        ).all()  # fmt: skip
    return out


def sample_paths(session: Session, *, project_id: int, ids: list[str],
                 win: Window) -> list[tuple[str, list[PathStep]]]:  # fmt: skip
    dialect = session.get_bind().dialect.name
    spans: dict[str, list[dict]] = defaultdict(list)
    lo, hi = win.start_at - _SPAN_SLACK, win.end_at + _SPAN_SLACK
    for i in range(0, len(ids), 500):
        for r in session.execute(
            select(*_SPAN_COLUMNS).where(
                Span.project_id == project_id, one_of(Span.trace_id, ids[i : i + 500], dialect),
                (Span.started_at >= lo) & (Span.started_at < hi) | Span.started_at.is_(None))
        ):  # fmt: skip
            spans[r.trace_id].append(dict(r._mapping))
    return [(t, trace_path(spans[t])) for t in ids if spans.get(t)]


def _nodes_and_edges(
    paths: list[tuple[str, list[PathStep]]],
) -> tuple[dict[str, dict], Counter, Counter]:  # fmt: skip
    """Per node its calls, errors, summed place and example traces (a failed call's first);
    per edge its transitions and the traces with it."""
    nodes: dict[str, dict] = {}
    edges: Counter[tuple[str, str]] = Counter()
    with_edge: Counter[tuple[str, str]] = Counter()
    for tid, path in paths:
        last = max(len(path) - 1, 1)
        for i, p in enumerate(path):
            n = nodes.setdefault(p.node, {"kind": p.kind, "name": p.name, "calls": 0, "errors": 0,
                                          "place": 0.0, "failed_in": [], "seen_in": []})  # fmt: skip
            n["calls"] += 1
            n["errors"] += p.failed
            n["place"] += i / last
            for key, hit in (("failed_in", p.failed), ("seen_in", True)):
                if hit and len(n[key]) < EXAMPLES and tid not in n[key]:
                    n[key].append(tid)
        pairs = [(a.node, b.node) for a, b in zip(path, path[1:], strict=False)]
        edges.update(pairs)
        with_edge.update(set(pairs))
    return nodes, edges, with_edge


def _keep(nodes: dict[str, dict]) -> dict[str, str]:
    """Each node's id in the drawn graph: itself, or ``other:`` beyond the busiest."""
    inner = sorted((k for k in nodes if k not in (START, END)), key=lambda k: (-nodes[k]["calls"], k))
    kept = set(inner[:MAX_NODES]) | {START, END}
    return {k: (k if k in kept else OTHER) for k in nodes}


def _exact(session: Session, scope: Scope) -> dict[str, tuple[int, int]]:
    """``(calls, errors)`` of each tool and model node over the whole range (the rollups).
    A call without a tool or model name is no node of the sample: it is left out."""
    out: dict[str, tuple[int, int]] = {}
    for table, col, prefix in ((ToolRollup, ToolRollup.tool, "tool:"),
                               (ModelRollup, ModelRollup.model, "llm:")):  # fmt: skip
        rows = session.execute(
            select(col, func.sum(table.calls), func.sum(table.errors))
            .where(table.project_id == scope.project_id, table.agent == scope.agent,
                   table.bucket >= scope.start, table.bucket < scope.end).group_by(col)
        )  # fmt: skip
        out.update({f"{prefix}{name}": (int(c or 0), int(e or 0)) for name, c, e in rows if name})
    return out


def _node(k: str, m: dict) -> GraphNode:
    """A drawn node: counted over the range where every step merged into it has rollup
    counts, else over the sample."""
    calls, errors = (m["calls"], m["errors"]) if m["exact"] else (m["sampled"], m["sampled_errors"])
    return GraphNode(
        id=k, kind=m["kind"], name=m["name"], calls=calls, errors=errors,
        error_rate=errors / calls if calls and k not in (START, END) else None,
        sampled_calls=m["sampled"], position=m["place"] / m["sampled"] if m["sampled"] else 1.0,
        counted="range" if m["exact"] else "sample",
        examples=m["examples"] if k not in (START, END) else [],
    )  # fmt: skip


def _merged(nodes: dict[str, dict], exact: dict[str, tuple[int, int]],
            ids_of: dict[str, str]) -> list[GraphNode]:  # fmt: skip
    """The drawn nodes: each kept node, and the rest added into ``other``."""
    merged: dict[str, dict] = {}
    for k, v in nodes.items():
        own = ids_of[k] == k
        m = merged.setdefault(ids_of[k], {
            "kind": v["kind"] if own else "other", "name": v["name"] if own else "other steps",
            "sampled": 0, "sampled_errors": 0, "calls": 0, "errors": 0, "place": 0.0,
            "exact": True, "examples": []})  # fmt: skip
        for tid in v["failed_in"] + v["seen_in"]:
            if tid not in m["examples"] and len(m["examples"]) < EXAMPLES:
                m["examples"].append(tid)
        m["sampled"] += v["calls"]
        m["sampled_errors"] += v["errors"]
        m["place"] += v["place"]
        if k in exact:
            m["calls"] += exact[k][0]
            m["errors"] += exact[k][1]
        else:
            m["exact"] = False
    return sorted((_node(k, m) for k, m in merged.items()), key=lambda n: (n.position, n.id))


def agent_graph(session: Session, *, project_id: int, agent: str, win: Window) -> AgentGraph:
    """The agent's graph over ``win``: sample, paths, nodes and edges, then the rollups'
    counts laid over the tool and model nodes (a tool the sample missed is a node too)."""
    scope = Scope(project_id, win.start, win.end, agent)
    ids = sample_ids(session, project_id=project_id, agent=agent, win=win)
    paths = sample_paths(session, project_id=project_id, ids=ids, win=win)
    nodes, edges, with_edge = _nodes_and_edges(paths)
    exact = _exact(session, scope)
    for k in exact:
        kind, _, name = k.partition(":")
        nodes.setdefault(k, {"kind": kind, "name": name, "calls": 0, "errors": 0, "place": 0.0,
                             "failed_in": [], "seen_in": []})  # fmt: skip
    ids_of = _keep({k: {**v, "calls": max(v["calls"], exact.get(k, (0, 0))[0])} for k, v in nodes.items()})
    drawn: Counter[tuple[str, str]] = Counter()
    traces: Counter[tuple[str, str]] = Counter()
    for (a, b), n in edges.items():
        drawn[(ids_of[a], ids_of[b])] += n
        traces[(ids_of[a], ids_of[b])] += with_edge[(a, b)]
    total = trace_sums(session, scope).get((agent,))
    return AgentGraph(
        agent=agent, range=win.name, start=win.start_at, end=win.end_at,
        traces_in_range=total.traces if total else 0, sampled_traces=len(paths),
        sample=(f"the first {PER_SLICE} production traces of each of {SLICES} equal slices of "
                f"the range ({len(paths)} traces read); tool and model calls are counted over "
                "every trace of the range"),
        nodes=_merged(nodes, exact, ids_of),
        edges=[GraphEdge(source=a, target=b, count=n, traces=min(traces[(a, b)], len(paths)))
               for (a, b), n in sorted(drawn.items(), key=lambda kv: (-kv[1], kv[0]))],
    )  # fmt: skip
