"""Two versions of an agent side by side (issue #52, item 5), from the rollups.

Each version's sums over the range come from the same grouped reads as the agent page, by
``agent_version``; each measure gets the test :mod:`detectors.version_compare` names for
it (Fisher's exact test on rates, Welch's t on means per trace from sums and sums of
squares, Mann-Whitney U on the latency sketches), and the p-values of all the measures are
Holm-adjusted together (:func:`detectors.significance.holm`), so "significant" means at
``alpha`` across the comparison, not per line. The default pair is the newest version and
the one before it, by the first time each was seen (in the rollups' retention, not the
range). Example traces are each version's newest in the range, failed ones first.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.agents.objectives import main_objective, true_objectives
from app.agents.ranges import Window
from app.agents.read import Scope, TraceSums, latencies, score_sums, tool_sums, trace_sums
from app.agents.schemas import ExampleTrace, MeasureOut, VersionComparison, VersionRow
from app.agents.series import version_rows
from app.models import Trace, TraceRollup
from detectors import version_compare as vc
from detectors.significance import holm

ALPHA = 0.01
EXAMPLES = 5


class VersionRefused(ValueError):
    """A pair that cannot be compared; the message starts with the parameter at fault."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}")
        self.field = field


def known_versions(session: Session, *, project_id: int, agent: str) -> list[VersionRow]:
    """Every version of the agent the rollups hold, newest first seen first."""
    t = TraceRollup
    rows = session.execute(
        select(t.agent_version, func.sum(t.traces), func.sum(t.error_traces), func.min(t.bucket),
               func.max(t.bucket))
        .where(t.project_id == project_id, t.agent == agent).group_by(t.agent_version)
    )  # fmt: skip
    sums: dict[tuple[str, ...], TraceSums] = {(str(v),): TraceSums(traces=int(n or 0), error_traces=int(e or 0),
                                 first_bucket=int(lo), last_bucket=int(hi))
            for v, n, e, lo, hi in rows}  # fmt: skip
    return version_rows(sums)


def examples(session: Session, *, project_id: int, agent: str, version: str,
             win: Window) -> list[ExampleTrace]:  # fmt: skip
    """The version's newest production traces in the range, failed ones first."""
    start, end = win.start_at, win.end_at
    out: list[ExampleTrace] = []
    for status in ("error", None):
        q = select(Trace.trace_id, Trace.started_at, Trace.ended_at, Trace.status).where(
            Trace.project_id == project_id, Trace.agent == agent,
            Trace.agent_version == version, Trace.started_at >= start, Trace.started_at < end,
            Trace.source == "production",  # what the measures count
        )  # fmt: skip
        q = q.where(Trace.status == "error") if status else q.where(Trace.status != "error")
        limit = 2 if status else EXAMPLES - len(out)
        for tid, s, e, st in session.execute(q.order_by(Trace.started_at.desc()).limit(limit)):
            ms = (e - s).total_seconds() * 1000 if s and e else None
            out.append(ExampleTrace(trace_id=tid, started_at=s, status=st, latency_ms=ms))
    return out


def compare(session: Session, *, project_id: int, agent: str, win: Window, a: str | None,
            b: str | None) -> VersionComparison:  # fmt: skip
    """Version ``b`` against ``a`` (default: the newest against the one before; one named
    alone is set against the newest other); :class:`VersionRefused` for a version without
    traffic, the same version twice, or an agent with fewer than two versions."""
    versions = known_versions(session, project_id=project_id, agent=agent)
    names = [v.version for v in versions]  # newest first
    for field, v in (("a", a), ("b", b)):
        if v is not None and v not in names:
            raise VersionRefused(field, f"no traffic of version {v!r} for agent {agent!r}")
    if a is None or b is None:
        if len(names) < 2:
            raise VersionRefused("a", f"agent {agent!r} has {len(names)} version(s); a comparison needs two")
        if a is None and b is None:
            b, a = names[0], names[1]
        elif a is None:
            a = next(n for n in names if n != b)
        else:
            b = next(n for n in names if n != a)
    if a == b:
        raise VersionRefused("b", "the same version as a")
    assert a is not None and b is not None
    span = Scope(project_id, win.start, win.end, agent)
    by_v = ("agent_version",)
    sums = trace_sums(session, span, by=by_v)
    tools = tool_sums(session, span, by=by_v)
    scores = score_sums(session, span, by=("agent_version", "name"))
    pos = {a: 0, b: 1}
    lat = latencies(session, span, by=by_v, rows_of=lambda k, _b: pos.get(k[0]), n_rows=2)
    sa, sb = sums.get((a,), TraceSums()), sums.get((b,), TraceSums())
    ta, tb = tools.get((a,), (0, 0)), tools.get((b,), (0, 0))
    tests = [
        vc.compare_rates("trace failure rate", sa.error_traces, sa.traces, sb.error_traces, sb.traces),
        vc.compare_rates("tool error rate", ta[1], ta[0], tb[1], tb[0]),
        vc.compare_rates("loop rate", sa.loop_traces, sa.traces, sb.loop_traces, sb.traces),
    ]  # fmt: skip
    units = ["rate", "rate", "rate"]
    objective = main_objective(
        {k[1]: v[0] for k, v in scores.items()},
        true_objectives(session, project_id=project_id, names={k[1] for k in scores}),
    )
    if objective is not None:
        (na, pa, _), (nb, pb, _) = (scores.get((v, objective), (0, 0, 0.0)) for v in (a, b))
        tests.insert(0, vc.compare_rates(f"success ({objective})", pa, na, pb, nb))
        units.insert(0, "rate")
    for q, name in ((0.5, "p50 latency"), (0.95, "p95 latency")):
        qa, qb = (float(x) if x == x else None for x in lat.quantile(q))
        tests.append(vc.compare_binned(name, lat.counts[0], lat.counts[1], qa, qb))
        units.append("ms")
    tests.append(vc.compare_means("tokens per trace", sa.traces, sa.tokens, sa.tokens_sq,
                                  sb.traces, sb.tokens, sb.tokens_sq))  # fmt: skip
    tests.append(vc.compare_means("cost per trace", sa.traces, sa.cost, sa.cost_sq,
                                  sb.traces, sb.cost, sb.cost_sq))  # fmt: skip
    units += ["tokens", "usd"]
    return VersionComparison(
        agent=agent, range=win.name, start=win.start_at, end=win.end_at, a=a, b=b,
        versions=versions, measures=_with_holm(tests, units), alpha=ALPHA,
        examples_a=examples(session, project_id=project_id, agent=agent, version=a, win=win),
        examples_b=examples(session, project_id=project_id, agent=agent, version=b, win=win),
    )  # fmt: skip


def _with_holm(tests: list[vc.MeasureTest], units: list[str]) -> list[MeasureOut]:
    """The measures with Holm-adjusted p-values over those that were tested. The two latency
    quantiles share one Mann-Whitney test, so it enters the family once."""
    tested = {i: t.p_value for i, t in enumerate(tests)
              if t.p_value is not None and t.measure != "p95 latency"}  # fmt: skip
    adjusted: dict[int, float] = {}
    if tested:
        adjusted = dict(zip(tested, (float(p) for p in holm(list(tested.values()))), strict=True))
    p50 = next((i for i, t in enumerate(tests) if t.measure == "p50 latency"), -1)
    out = []
    for i, (t, unit) in enumerate(zip(tests, units, strict=True)):
        p_holm = adjusted.get(p50 if t.measure == "p95 latency" else i)
        out.append(MeasureOut(
            measure=t.measure, unit=unit, a=t.a, b=t.b, n_a=t.n_a, n_b=t.n_b, change=t.change,
            relative_change=t.relative_change, statistic=t.statistic, p_value=t.p_value,
            p_holm=float(p_holm) if p_holm is not None else None, test=t.test,
            significant=p_holm is not None and p_holm <= ALPHA,
        ))  # fmt: skip
    return out

