"""What the agent pages draw: the charts of an agent's series, the traces list's links for
an agent, a tool and a range, and the words of a comparison's changes."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from app.agents.schemas import AgentDetail, GraphNode, MeasureOut
from app.web import agent_chart
from app.web.agent_chart import Line


def traces_href(agent: str, start: datetime, end: datetime | None = None, **more: str) -> str:
    """The traces list of ``agent`` from ``start`` (and ``more`` filters), as a link.

    >>> from datetime import UTC
    >>> traces_href("a b/c", datetime(2026, 12, 5, 10, tzinfo=UTC), tool="x&y")
    '/traces?agent=a+b%2Fc&since=2026-12-05T10%3A00&tool=x%26y'
    """
    query = {"agent": agent, "since": f"{start:%Y-%m-%dT%H:%M}"}
    if end is not None:
        query["until"] = f"{end:%Y-%m-%dT%H:%M}"
    return "/traces?" + urlencode({**query, **more})


def node_href(agent: str, start: datetime) -> Any:
    """A graph node's link: a tool's or a model's traces, or the agent's for other steps."""

    def href(n: GraphNode) -> str | None:
        if n.kind == "tool":
            return traces_href(agent, start, tool=n.name)
        if n.kind == "llm" and n.counted == "range":  # named by its model (app.agents.paths)
            return traces_href(agent, start, model=n.name)
        if n.kind in ("start", "end"):
            return None
        return traces_href(agent, start)

    return href


def charts(d: AgentDetail) -> list[dict[str, Any]]:
    """The agent page's charts, each with its title, SVG and legend."""
    pts = d.points
    times = [p.at for p in pts]
    step = d.step_seconds
    per = "hour" if step == 3600 else f"{step // 3600} hours"
    success = d.summary.success
    specs: list[tuple[str, str, list[Line]]] = [
        (f"Traces per {per}", "count", [Line("traces", [float(p.traces) for p in pts], bars=True)]),
        ("Errors and loops", "rate", [
            Line("trace failure rate", [p.failure_rate for p in pts]),
            Line("tool error rate", [p.tool_error_rate for p in pts]),
            Line("loop rate", [p.loop_rate for p in pts]),
        ]),
        ("Latency", "ms", [Line("p50", [p.p50_ms for p in pts]), Line("p95", [p.p95_ms for p in pts])]),
        ("Tokens per trace", "count", [Line("tokens per trace", [p.tokens_per_trace for p in pts])]),
        ("Cost per trace", "usd", [Line("cost per trace", [p.cost_per_trace for p in pts])]),
    ]  # fmt: skip
    if success is not None:
        specs.insert(1, (f"Success ({success.objective})", "rate",
                         [Line(f"{success.objective} passed", [p.success_rate for p in pts])]))  # fmt: skip
    out = [{"id": f"chart-{i}", "title": title,
            "svg": agent_chart.svg(times, lines, label=f"{title} of agent {d.summary.agent}",
                                   unit=unit, step_seconds=step),
            "legend": agent_chart.legend(lines) if len(lines) > 1 else []}
           for i, (title, unit, lines) in enumerate(specs)]  # fmt: skip
    days = [Line("cost per day", [x.cost for x in d.days], bars=True)]
    out.append({"id": f"chart-{len(out)}", "title": "Cost per day (UTC)",
                "svg": agent_chart.svg([x.day for x in d.days], days, unit="usd", step_seconds=86_400,
                                       label=f"Cost per day of agent {d.summary.agent}"),
                "legend": []})  # fmt: skip
    return out


def value(m: MeasureOut, v: float | None) -> str:
    if v is None:
        return "–"
    if m.unit == "rate":
        return f"{v * 100:.1f}%"
    return agent_chart.fmt({"tokens": "count"}.get(m.unit, m.unit))(v)


def change(m: MeasureOut) -> str:
    """A measure's change in words: points for a rate, percent for the rest.

    >>> m = MeasureOut(measure="x", unit="rate", a=0.1, b=0.02, n_a=1, n_b=1, change=-0.08,
    ...                relative_change=-0.8, statistic=None, p_value=None, p_holm=None,
    ...                test="Fisher exact", significant=False)
    >>> change(m)
    '−8.0 points'
    """
    if m.change is None:
        return "–"
    if m.unit == "rate":
        pts = m.change * 100
        return f"{'+' if pts >= 0 else '−'}{abs(pts):.1f} points"
    if m.relative_change is None:
        return "–"
    r = m.relative_change * 100
    return f"{'+' if r >= 0 else '−'}{abs(r):.1f}%"


def p_words(p: float | None) -> str:
    """A p-value as people write it.

    >>> p_words(0.0031), p_words(2e-12), p_words(None)
    ('p = 0.0031', 'p < 0.0001', 'not tested')
    """
    if p is None:
        return "not tested"
    return "p < 0.0001" if p < 1e-4 else f"p = {p:.2g}" if p < 0.01 else f"p = {p:.2f}"
