"""The agents home: every agent with traffic in the range, one row each, from the rollups.

Three grouped reads whatever the traffic (trace sums per agent and version, score sums,
the latency sketches), one index seek per agent for the time it was last seen
(``ix_traces_project_agent``) and one read of the open alerts. Agents are listed busiest
first, at most :data:`MAX_AGENTS`. The list leaves tool calls out (``tool_calls`` and
``tool_error_rate`` are None there): the tool rollups are the widest table (six tools an
agent make them six times the trace rollups), and reading them for every agent cost the
home a third of its time (bench/agent_pages.py); an agent's page reads its own.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.agents import alerts as open_alerts
from app.agents.objectives import main_objective, true_objectives
from app.agents.ranges import Window
from app.agents.read import Scope, TraceSums, latencies, score_sums, totals, trace_sums
from app.agents.schemas import AgentList, AgentRow, Success
from app.models import Trace

MAX_AGENTS = 200


def ratio(num: float, den: float) -> float | None:
    """``num / den``, None without a denominator (no data is not a zero rate).

    >>> ratio(3, 4), ratio(0, 0)
    (0.75, None)
    """
    return num / den if den else None


def last_seen(session: Session, *, project_id: int, agent: str) -> datetime | None:
    return session.scalar(
        select(func.max(Trace.started_at)).where(Trace.project_id == project_id, Trace.agent == agent)
    )


def success_of(
    scores: dict[tuple[str, ...], tuple[int, int, float]], objectives: set[str], agent: str
) -> Success | None:
    """The agent's success over its main objective (score sums keyed ``(agent, name)``)."""
    mine = {k[1]: v for k, v in scores.items() if k[0] == agent}
    name = main_objective({n: v[0] for n, v in mine.items()}, objectives)
    if name is None:
        return None
    n, passed, _ = mine[name]
    return Success(objective=name, rate=passed / n, scores=n)


def row(
    agent: str, s: TraceSums, *, hours: float, tools: tuple[int, int] | None, p50: float | None,
    p95: float | None, success: Success | None, alerts: int, versions: int, seen: datetime | None,
) -> AgentRow:  # fmt: skip
    """One agent's figures from its sums."""
    return AgentRow(
        agent=agent, traces=s.traces, traces_per_hour=s.traces / hours if hours else 0.0,
        failure_rate=ratio(s.error_traces, s.traces), tool_calls=tools[0] if tools else None,
        tool_error_rate=ratio(tools[1], tools[0]) if tools else None, p50_ms=p50, p95_ms=p95,
        tokens_per_trace=ratio(s.tokens, s.traces), cost_per_trace=ratio(s.cost, s.traces),
        cost=s.cost, loop_rate=ratio(s.loop_traces, s.traces), success=success,
        open_alerts=alerts, versions=versions, last_seen=seen,
    )  # fmt: skip


def _finite(x: Any) -> float | None:
    return float(x) if x == x else None  # NaN: no latency in the range


def agent_list(session: Session, *, project_id: int, win: Window) -> AgentList:
    """Every agent with production traffic in ``win``, busiest first."""
    span = Scope(project_id, win.start, win.end)
    by_version = trace_sums(session, span, by=("agent", "agent_version"))
    sums = totals(by_version)
    names = sorted(sums, key=lambda k: (-sums[k].traces, k))[:MAX_AGENTS]
    index = {k[0]: i for i, k in enumerate(names)}
    lat = latencies(session, span, rows_of=lambda k, _b: index.get(k[0]), n_rows=len(names))
    p50, p95 = lat.quantile(0.5), lat.quantile(0.95)
    scores = score_sums(session, span)
    objectives = true_objectives(session, project_id=project_id, names={k[1] for k in scores})
    per_version = Counter(k[0] for k in by_version)
    found = open_alerts.open_alerts(session, project_id=project_id)
    by_agent = open_alerts.count_by_agent(found)
    rows = [
        row(a, sums[(a,)], hours=win.hours, tools=None,
            p50=_finite(p50[i]), p95=_finite(p95[i]),
            success=success_of(scores, objectives, a), alerts=by_agent.get(a, 0),
            versions=per_version.get(a, 0),
            seen=last_seen(session, project_id=project_id, agent=a))
        for (a,), i in ((k, index[k[0]]) for k in names)
    ]  # fmt: skip
    return AgentList(range=win.name, start=win.start_at, end=win.end_at, agents=rows,
                     project_alerts=by_agent.get(None, 0))  # fmt: skip


def busiest(session: Session, *, project_id: int, win: Window, limit: int = 5) -> list[AgentRow]:
    """The overview's strip: the busiest agents with their traffic and failure rate only, from
    one grouped read of the trace rollups (no sketches, no alerts: the overview keeps its
    own budget; the home has the rest)."""
    sums = trace_sums(session, Scope(project_id, win.start, win.end))
    names = sorted(sums, key=lambda k: (-sums[k].traces, k))[:limit]
    return [row(k[0], sums[k], hours=win.hours, tools=None, p50=None, p95=None, success=None,
                alerts=0, versions=0, seen=None) for k in names]  # fmt: skip
