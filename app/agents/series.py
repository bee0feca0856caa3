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
from app.models import ModelRollup, ScoreRollup, ToolRollup, Trace, TraceRollup

_TRACE_SUMS = ("traces", "error_traces", "loop_traces", "labeled_traces", "tokens", "tokens_sq",
               "cost", "cost_sq")  # fmt: skip
_COUNTS = {"traces", "error_traces", "loop_traces", "labeled_traces"}
# The series' columns of _TRACE_SUMS: traces, error_traces, loop_traces, tokens, cost.
_SERIES = (0, 1, 2, 4, 6)
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


def _nan_none(values: np.ndarray) -> list[float | None]:
    return [float(v) if v == v else None for v in values]


def _sums(rows: list[tuple[int, tuple[str, ...], list[float]]]) -> dict[tuple[str, ...], TraceSums]:
    """Trace rollup sums per group, with each group's first and last bucket (one numpy pass:
    a week of an agent is thousands of rows)."""
    if not rows:
        return {}
    keys = sorted({k for _b, k, _v in rows})
    index = {k: i for i, k in enumerate(keys)}
    at = np.fromiter((index[k] for _b, k, _v in rows), dtype=np.int64, count=len(rows))
    buckets = np.fromiter((b for b, _k, _v in rows), dtype=np.int64, count=len(rows))
    values = np.asarray([v for _b, _k, v in rows], dtype=np.float64)
    total = np.zeros((len(keys), values.shape[1]))
    np.add.at(total, at, values)
    first = np.full(len(keys), np.iinfo(np.int64).max)
    last = np.full(len(keys), np.iinfo(np.int64).min)
    np.minimum.at(first, at, buckets)
    np.maximum.at(last, at, buckets)
    return {k: TraceSums(**{c: (int(v) if c in _COUNTS else float(v))  # type: ignore[arg-type]
                            for c, v in zip(_TRACE_SUMS, total[i], strict=True)},
                         first_bucket=int(first[i]), last_bucket=int(last[i]))
            for i, k in enumerate(keys)}  # fmt: skip


def agent_detail(session: Session, *, project_id: int, agent: str, win: Window) -> AgentDetail:
    """The agent page's data over ``win`` (an agent without traffic in it has empty series):
    five reads of the rollups (traces per bucket and version, tools per bucket, scores per
    bucket and name, model calls, sketches), each folded into steps and totals here."""
    span = Scope(project_id, win.start, win.end, agent)
    n, step = win.steps, win.step
    fold = {"start": win.start, "step": step, "n": n}
    trace_rows = per_bucket(session, span, table=TraceRollup, columns=_TRACE_SUMS, by=("agent_version",))
    versions = _sums(trace_rows)
    sums = _sums([(b, (), v) for b, _k, v in trace_rows]).get(())
    t = _fold([(b, [v[i] for i in _SERIES]) for b, _k, v in trace_rows], **fold, width=len(_SERIES))
    tool_rows = per_bucket(session, span, table=ToolRollup, columns=("calls", "errors"))
    tl = _fold([(b, v) for b, _k, v in tool_rows], **fold, width=2)
    tools = (int(tl[0].sum()), int(tl[1].sum()))
    score_rows = per_bucket(session, span, table=ScoreRollup, columns=("scores", "passed"), by=("name",))
    by_name: dict[str, list[float]] = {}
    for _b, (name,), (k, passed) in score_rows:
        acc = by_name.setdefault(name, [0.0, 0.0])
        acc[0], acc[1] = acc[0] + k, acc[1] + passed
    objective = main_objective({k: int(v[0]) for k, v in by_name.items()},
                               true_objectives(session, project_id=project_id, names=set(by_name)))  # fmt: skip
    sc = _fold([(b, v) for b, (name,), v in score_rows if name == objective], **fold, width=2)
    models = per_bucket(session, span, table=ModelRollup, columns=("calls", "unpriced_calls"))
    model_calls, unpriced = (int(sum(v[i] for _b, _k, v in models)) for i in (0, 1))
    lat = latencies(session, span, rows_of=lambda _k, b: (b - win.start) // step, n_rows=n)
    whole = lat.merged()
    mine = [a for a in open_alerts.open_alerts(session, project_id=project_id) if a.agent == agent]
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
    if objective is not None:
        k, passed = by_name[objective]
        success = Success(objective=objective, rate=passed / k, scores=int(k))
    summary = row(agent, sums or TraceSums(), hours=win.hours, tools=tools,
                  p50=_nan_none(whole.quantile(0.5))[0], p95=_nan_none(whole.quantile(0.95))[0],
                  success=success, alerts=len(mine), versions=len(versions),
                  seen=last_seen(session, project_id=project_id, agent=agent))  # fmt: skip
    return AgentDetail(
        range=win.name, start=win.start_at, end=win.end_at, step_seconds=step, summary=summary,
        model_calls=model_calls, unpriced_calls=unpriced,
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
