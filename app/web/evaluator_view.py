"""What the evaluator pages show: an evaluator in words (what it computes, its state, today's
use against its budget), its mean score over time, and its latest errors and evaluations
(on the trace page, which evaluator wrote each score and why: :mod:`app.web.trace_evaluations`).

The evaluator as the API reads it comes from :func:`app.evaluators.store.out`; the queries
here are the pages' own (the chart's buckets, the newest rows of one evaluator).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Integer, cast, func, literal_column, select
from sqlalchemy.orm import Session

from app.evaluators.store import EvaluatorOut
from app.models.evaluators import Evaluation, Evaluator
from app.web import run_chart
from app.web.evaluator_form import CHECK_WORDS

CHART_DAYS = 7
# Bucket widths the chart picks from: the narrowest that draws the data in at most
# CHART_POINTS points.
STEPS = ((300, "5 minutes"), (900, "15 minutes"), (3600, "hour"), (6 * 3600, "6 hours"),
         (86400, "day"))  # fmt: skip
CHART_POINTS = 120
STATUSES = ("done", "error", "pending", "running", "skipped")


def computes(o: EvaluatorOut) -> str:
    """What the evaluator computes, in a few words."""
    c = o.config
    if o.kind == "llm_judge":
        answer = "a label" if c.get("answer") == "label" else "a score from 0 to 1"
        return f"LLM judge {c.get('model', '?')}, answering with {answer}"
    return f"check: {CHECK_WORDS.get(c.get('check', ''), c.get('check', '?'))}"


def summary(o: EvaluatorOut) -> dict[str, Any]:
    """The words the list and the evaluator's page show for ``o``."""
    if not o.enabled:
        state, badge = "paused", "muted"
    elif o.paused_until is not None:
        state, badge = f"paused by the circuit breaker until {o.paused_until:%H:%M} UTC", "firing"
    else:
        state, badge = "running", "ok"
    u = o.usage_today
    if o.kind == "llm_judge":
        today = (f"{u.calls:,} of {u.daily_calls:,} calls, {u.tokens:,} of {u.daily_tokens:,} "
                 "tokens")  # fmt: skip
        if u.errors:
            today += f", {u.errors:,} failed"
    else:
        today = "a check calls no model (no budget spent)"
    counts = [(s, o.counts[s]) for s in STATUSES if o.counts.get(s)]
    return {
        "computes": computes(o), "state": state, "badge": badge,
        "reason": o.pause_reason, "today": today,
        "counts": ", ".join(f"{n:,} {s}" for s, n in counts) or "none yet",
        "writes": o.score_name + (f" (predicts {o.objective})" if o.objective else ""),
        "over_calls": o.kind == "llm_judge" and u.calls >= u.daily_calls,
        "over_tokens": o.kind == "llm_judge" and u.tokens >= u.daily_tokens,
    }  # fmt: skip


def _bucket(column: Any, step: int, dialect: str) -> Any:
    """The epoch second of the ``step``-wide bucket holding ``column``, on either database."""
    # The width as SQL text, not a parameter: GROUP BY must repeat the SELECT's expression
    # exactly, and PostgreSQL sees two parameters as two expressions.
    width = literal_column(str(int(step)), Integer)
    if dialect == "postgresql":
        return cast(func.floor(func.extract("epoch", column) / width), Integer) * width
    return (cast(func.strftime("%s", column), Integer) // width) * width


@dataclass(frozen=True)
class ScoreChart:
    svg: Any
    step: str
    evaluations: int


def score_chart(session: Session, ev: Evaluator, *, now: datetime) -> ScoreChart:
    """The mean score of the evaluator's finished evaluations per bucket over the last
    :data:`CHART_DAYS` days (every version), by the time they were evaluated."""
    since = now - timedelta(days=CHART_DAYS)
    done = (Evaluation.evaluator_id == ev.id, Evaluation.status == "done",
            Evaluation.finished_at >= since, Evaluation.value.is_not(None))  # fmt: skip
    first = session.scalar(select(func.min(Evaluation.finished_at)).where(*done))
    span = (now - first).total_seconds() if first is not None else 0.0
    step, words = next(((s, w) for s, w in STEPS if span / s <= CHART_POINTS), STEPS[-1])
    bucket = _bucket(Evaluation.finished_at, step, session.get_bind().dialect.name)
    rows = session.execute(
        select(bucket, func.avg(Evaluation.value), func.count()).where(*done)
        .group_by(bucket).order_by(bucket)
    ).all()  # fmt: skip
    points = [run_chart.RunPoint(datetime.fromtimestamp(int(b), tz=now.tzinfo), float(v),
                                 None, False, "ok") for b, v, _ in rows]  # fmt: skip
    svg = run_chart.svg(points, marks=run_chart.Marks(), bounds=(0.0, 1.0),
                        label=f"mean {ev.score_name} per {words}, last {CHART_DAYS} days")  # fmt: skip
    return ScoreChart(svg, words, sum(int(n) for _, _, n in rows))


def latest(session: Session, ev: Evaluator, *, status: str | None = None,
           limit: int = 50) -> list[Evaluation]:  # fmt: skip
    """The evaluator's newest finished evaluations (of ``status`` when given)."""
    q = select(Evaluation).where(Evaluation.evaluator_id == ev.id,
                                 Evaluation.finished_at.is_not(None))  # fmt: skip
    if status is not None:
        q = q.where(Evaluation.status == status)
    return list(session.scalars(q.order_by(Evaluation.finished_at.desc(), Evaluation.id.desc())
                                .limit(limit)))  # fmt: skip
