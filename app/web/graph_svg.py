"""An agent's graph as SVG drawn on the server: an arc diagram.

Nodes stand in one column in the order they usually come in a trace (their mean place,
:attr:`app.agents.schemas.GraphNode.position`), from ``start`` to ``end``; a transition
down the column is an arc on the right, one back up (a retry, a re-plan) an arc on the
left, and a step repeated (a loop) a red loop beside its node. An arc's width grows with
its count (square root, so a rare path stays visible); its count is written at its apex
and in its ``<title>``. An arc diagram keeps every label horizontal and never crosses a
node, which a force layout drawn without a script cannot promise. Each node links to its
example traces (``href_of``). Presentation attributes only (CSP), every text escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from markupsafe import Markup, escape

from app.agents.schemas import AgentGraph, GraphNode

W, ROW, TOP = 560, 56, 16
BOX_X, BOX_W, BOX_H = 130, 280, 40
RIGHT_X, LEFT_X = BOX_X + BOX_W, BOX_X
NAME_CHARS = 30
_FILL = {"start": "#eef1f7", "end": "#eef1f7", "tool": "#ffffff", "llm": "#f3f0fb",
         "agent": "#eef7f1"}  # fmt: skip


def _short(name: str) -> str:
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"


def _label(n: GraphNode) -> Markup:
    """The node's first line: its kind, small, then its name (start and end: the word)."""
    if n.kind in ("start", "end"):
        return Markup("<tspan font-weight=\"600\">{}</tspan>").format(n.name)
    return Markup('<tspan fill="#555d70" font-size="12">{}</tspan> {}').format(n.kind, _short(n.name))


def _node_words(n: GraphNode) -> str:
    if n.kind in ("start", "end"):
        return f"{n.sampled_calls:,} traces"
    rate = f" · {n.error_rate * 100:.1f}% errors" if n.error_rate is not None else ""
    where = " in the sample" if n.counted == "sample" else ""
    return f"{n.calls:,} calls{where}{rate}"


def svg(g: AgentGraph, *, href_of: Callable[[GraphNode], str | None]) -> Markup:
    nodes = g.nodes
    row = {n.id: i for i, n in enumerate(nodes)}
    h = TOP * 2 + ROW * max(len(nodes), 1)
    head = (f'<svg class="agent-graph" viewBox="0 0 {W} {h}" role="group" '
            f'aria-label="{escape(f"Graph of agent {g.agent}: {len(nodes)} nodes, {len(g.edges)} transitions")}" '
            'xmlns="http://www.w3.org/2000/svg">'
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" '
            'markerHeight="9" markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#5b6b8c"/>'
            "</marker></defs>")  # fmt: skip
    if not g.edges:
        return Markup(head + f'<text x="{W / 2}" y="{h / 2}" text-anchor="middle" fill="#555d70">'
                      "No traces of this agent in the range</text></svg>")  # fmt: skip
    top = max(e.count for e in g.edges)

    def cy(i: int) -> float:
        return TOP + i * ROW + BOX_H / 2

    parts = [head]
    for e in sorted(g.edges, key=lambda e: e.count):
        if e.source not in row or e.target not in row:
            continue
        i, j = row[e.source], row[e.target]
        width = 1 + 5 * math.sqrt(e.count / top)
        tip = escape(f"{e.source} → {e.target}: {e.count:,} transitions in {e.traces:,} sampled traces")
        if i == j:  # a loop: the same step again
            y = cy(i)
            parts.append(f'<path class="edge loop" d="M{RIGHT_X},{y - 8} C{RIGHT_X + 46},{y - 30} '
                         f'{RIGHT_X + 46},{y + 30} {RIGHT_X},{y + 8}" fill="none" stroke="#c62f2f" '
                         f'stroke-width="{width:.1f}" marker-end="url(#arrow)"><title>{tip}</title></path>'
                         f'<text x="{RIGHT_X + 40}" y="{y + 4}" font-size="11" fill="#c62f2f">'
                         f"↻ {e.count:,}</text>")  # fmt: skip
            continue
        down = j > i
        x = RIGHT_X if down else LEFT_X
        bulge = min(170, 24 + 26 * abs(j - i)) * (1 if down else -1)
        y1, y2 = cy(i) + (5 if down else -5), cy(j) - (5 if down else -5)
        parts.append(f'<path class="edge" d="M{x},{y1:.1f} C{x + bulge},{y1:.1f} {x + bulge},{y2:.1f} '
                     f'{x},{y2:.1f}" fill="none" stroke="#5b6b8c" stroke-opacity="0.7" '
                     f'stroke-width="{width:.1f}" marker-end="url(#arrow)"><title>{tip}</title></path>'
                     f'<text x="{x + bulge * 0.75:.1f}" y="{(y1 + y2) / 2 + 4:.1f}" font-size="10" '
                     f'text-anchor="middle" fill="#3d4a66">{e.count:,}</text>')  # fmt: skip
    for i, n in enumerate(nodes):
        y = TOP + i * ROW
        bad = n.error_rate is not None and n.error_rate >= 0.05
        box = (f'<g class="node" data-node="{escape(n.id)}"><title>{escape(n.kind)} {escape(n.name)}: '
               f"{escape(_node_words(n))}</title>"
               f'<rect x="{BOX_X}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="6" '
               f'fill="{"#fdecec" if bad else _FILL.get(n.kind, "#ffffff")}" '
               f'stroke="{"#c62f2f" if bad else "#b8c0d4"}"/>'
               f'<text x="{BOX_X + 10}" y="{y + 17}" font-size="14" fill="#1d2333">{_label(n)}</text>'
               f'<text x="{BOX_X + 10}" y="{y + 33}" font-size="12" fill="{"#a32020" if bad else "#555d70"}">'
               f"{escape(_node_words(n))}</text></g>")  # fmt: skip
        href = href_of(n)
        parts.append(f'<a href="{escape(href)}">{box}</a>' if href else box)
    parts.append("</svg>")
    return Markup("".join(parts))
