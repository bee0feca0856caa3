"""One agent over a range: its row of the home, its series per chart step, its cost per
day, its versions and its open alerts, all from the rollups.

Buckets are folded into chart steps (an hour; six hours over 30 days) and UTC days with
numpy; a step's p50 and p95 come from its merged sketches, so a point is the step's true
quantile to the sketch's 1 %, not an average of bucket quantiles.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.agents import alerts as open_alerts
from app.agents.objectives import main_objective, true_objectives
from app.agents.ranges import Window
from app.agents.read import (
    Scope,
    TraceSums,
    latencies,
    per_bucket,
    score_sums,
    tool_sums,
    trace_sums,
)
from app.agents.schemas import (
    AgentDetail,
    AlertRef,
    DayTotals,
    SeriesPoint,
    Success,
    VersionRow,
)
from app.agents.summary import last_seen, ratio, row
from app.models import ScoreRollup, ToolRollup, Trace, TraceRollup

_TRACE_COLUMNS = ("traces", "error_traces", "loop_traces", "tokens", "cost")
DAY = 86_400


def agent_exists(session: Session, *, project_id: int, agent: str) -> bool:
    """Whether any trace of the project names ``agent`` (an index seek)."""
    return session.scalar(
        select(Trace.id).where(Trace.project_id == project_id, Trace.agent == agent).limit(1)
    ) is not None


def _fold(rows: list[tuple[int, list[float]]], *, start: int, step: int, n: int, width: int) -> np.ndarray:
    out = np.zeros((width, n))
    for bucket, values in rows:
        out[:, (bucket - start) // step] += values
    return out


def _div(num: np.ndarray, den: np.ndarray) -> list[float | None]:
    return [float(a / b) if b else None for a, b in zip(num, den, strict=True)]


def _nan_none(values: np.ndarray) -> list[float | None]:
    return [float(v) if v == v else None for v in values]


def agent_detail(session: Session, *, project_id: int, agent: str, win: Window) -> AgentDetail:
    """The agent page's data over ``win`` (an agent without traffic in it has empty series)."""
    span = Scope(project_id, win.start, win.end, agent)
    n, step = win.steps, win.step
    sums = trace_sums(session, span).get((agent,))
    versions = trace_sums(session, span, by=("agent_version",))
    tools = tool_sums(session, span).get((agent,), (0, 0))
    scores = score_sums(session, span, by=("name",))
    objective = main_objective({k[0]: v[0] for k, v in scores.items()},
                               true_objectives(session, project_id=project_id,
                                               names={k[0] for k in scores}))  # fmt: skip
    lat = latencies(session, span, rows_of=lambda _k, b: (b - win.start) // step, n_rows=n)
    whole = lat.merged()
    mine = [a for a in open_alerts.open_alerts(session, project_id=project_id) if a.agent == agent]

    t = _fold(per_bucket(session, span, table=TraceRollup, columns=_TRACE_COLUMNS),
              start=win.start, step=step, n=n, width=len(_TRACE_COLUMNS))  # fmt: skip
    tl = _fold(per_bucket(session, span, table=ToolRollup, columns=("calls", "errors")),
               start=win.start, step=step, n=n, width=2)  # fmt: skip
    sc = np.zeros((2, n))
    if objective is not None:
        sc = _fold(per_bucket(session, span, table=ScoreRollup, columns=("scores", "passed"),
                              where=[ScoreRollup.name == objective]),
                   start=win.start, step=step, n=n, width=2)  # fmt: skip
    p50, p95 = _nan_none(lat.quantile(0.5)), _nan_none(lat.quantile(0.95))
    traces, errors, loops, tokens, cost = t
    points = [
        SeriesPoint(at=datetime.fromtimestamp(win.start + i * step, tz=UTC), traces=int(traces[i]),
                    traces_per_hour=float(traces[i]) * 3600 / step,
                    failure_rate=ratio(errors[i], traces[i]), tool_error_rate=ratio(tl[1][i], tl[0][i]),
                    success_rate=ratio(sc[1][i], sc[0][i]), p50_ms=p50[i], p95_ms=p95[i],
                    tokens_per_trace=ratio(tokens[i], traces[i]), cost_per_trace=ratio(cost[i], traces[i]),
                    loop_rate=ratio(loops[i], traces[i]))
        for i in range(n)
    ]  # fmt: skip
    success = None
    if objective is not None and scores[(objective,)][0]:
        k, passed, _ = scores[(objective,)]
        success = Success(objective=objective, rate=passed / k, scores=k)
    summary = row(agent, sums or TraceSums(), hours=win.hours, tools=tools,
                  p50=_nan_none(whole.quantile(0.5))[0], p95=_nan_none(whole.quantile(0.95))[0],
                  success=success, alerts=len(mine), versions=len(versions),
                  seen=last_seen(session, project_id=project_id, agent=agent))  # fmt: skip
    return AgentDetail(
        range=win.name, start=win.start_at, end=win.end_at, step_seconds=step, summary=summary,
        points=points, days=_days(t, win), versions=version_rows(versions),
        alerts=[AlertRef(id=a.id, severity=a.severity, state=a.state, summary=a.summary,
                         since=a.since) for a in mine],
    )  # fmt: skip


def _days(t: np.ndarray, win: Window) -> list[DayTotals]:
    """Traces, tokens and cost per UTC day, from the steps (a step never spans two days)."""
    out: dict[int, list[float]] = {}
    for i in range(t.shape[1]):
        day = (win.start + i * win.step) // DAY * DAY
        acc = out.setdefault(day, [0.0, 0.0, 0.0])
        acc[0] += t[0][i]
        acc[1] += t[3][i]
        acc[2] += t[4][i]
    return [DayTotals(day=datetime.fromtimestamp(d, tz=UTC), traces=int(v[0]), tokens=v[1], cost=v[2])
            for d, v in sorted(out.items())]  # fmt: skip


def _at(bucket: int | None) -> datetime | None:
    return datetime.fromtimestamp(bucket, tz=UTC) if bucket is not None else None


def version_rows(versions: dict[tuple[str, ...], TraceSums]) -> list[VersionRow]:
    """Versions by the first bucket they were seen in, newest first (ties: by name)."""
    out = [VersionRow(version=v, traces=s.traces, failure_rate=ratio(s.error_traces, s.traces),
                      first_seen=_at(s.first_bucket), last_seen=_at(s.last_bucket))
           for (v,), s in versions.items()]  # fmt: skip
    return sorted(out, key=lambda r: (r.first_seen or _EPOCH, r.version), reverse=True)


_EPOCH = datetime.fromtimestamp(0, tz=UTC)
