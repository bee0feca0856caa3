"""Evaluators as the API and the pages see them: create, change (a new version when what it
computes changes), read with its use and its state, backfill a time range explicitly."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db import dialect_insert
from app.derive.evaluations import environment, sampled
from app.evaluators.spec import EvaluatorCreate, EvaluatorPatch
from app.models import Trace
from app.models.base import utcnow
from app.models.evaluators import Evaluation, Evaluator, EvaluatorUsage
from app.monitors.defaults import ensure_judge_monitor
from app.response_model import ResponseModel, Time

BACKFILL_MAX = 100_000  # evaluations one backfill may queue


class UsageOut(ResponseModel):
    day: str
    calls: int
    tokens: int
    errors: int
    daily_calls: int
    daily_tokens: int


class EvaluatorOut(ResponseModel):
    id: int
    name: str
    kind: str
    score_name: str
    objective: str | None
    version: int
    config: dict[str, Any]
    has_api_key: bool
    selection: dict[str, Any]
    sample_rate: float
    delay_seconds: int
    daily_calls: int
    daily_tokens: int
    concurrency: int
    timeout_seconds: float
    max_retries: int
    enabled: bool
    paused_until: Time | None
    pause_reason: str | None
    created_at: Time
    usage_today: UsageOut
    counts: dict[str, int] = Field(description="this version's evaluations by status")


class EvaluatorList(ResponseModel):
    evaluators: list[EvaluatorOut]


def _config(body: EvaluatorCreate | EvaluatorPatch) -> dict[str, Any] | None:
    if body.judge is not None:
        return body.judge.model_dump(mode="json")
    if body.check is not None:
        return body.check.model_dump(mode="json", by_alias=True)
    return None


def create(session: Session, *, project_id: int, body: EvaluatorCreate) -> Evaluator:
    now = utcnow()
    ev = Evaluator(
        project_id=project_id, name=body.name, kind=body.kind,
        score_name=body.score_name or body.name, objective=body.objective,
        config=_config(body) or {}, version=1, api_key=body.api_key or None,
        selection=body.selection.model_dump(), sample_rate=body.sample_rate,
        delay_seconds=body.delay_seconds, daily_calls=body.daily_calls,
        daily_tokens=body.daily_tokens, concurrency=body.concurrency,
        timeout_seconds=body.timeout_seconds, max_retries=body.max_retries,
        enabled=body.enabled, failures_in_row=0, watch_from=now, updated_at=now,
        created_at=now,
    )  # fmt: skip
    session.add(ev)
    session.flush()
    if ev.objective:
        ensure_judge_monitor(session, project_id=project_id)
    return ev


def update(session: Session, ev: Evaluator, patch: EvaluatorPatch) -> Evaluator:
    """Apply ``patch``; a new judge or check config makes a new version, watching from now
    (earlier traces take the new version only through a backfill)."""
    now = utcnow()
    if ev.kind == "llm_judge" and patch.check is not None:
        raise ValueError("check: this evaluator is an llm_judge; it takes `judge`")
    if ev.kind == "check" and patch.judge is not None:
        raise ValueError("judge: this evaluator is a check; it takes `check`")
    config = _config(patch)
    if config is not None and config != ev.config:
        ev.config = config
        ev.version += 1
        ev.watch_from = now
    fields = patch.model_dump(exclude_unset=True, exclude={"judge", "check", "api_key"})
    for name, value in fields.items():
        setattr(ev, name, value)
    if patch.api_key is not None:
        ev.api_key = patch.api_key or None
    if ev.objective:
        ensure_judge_monitor(session, project_id=ev.project_id)
    if patch.enabled:  # turning it on again also closes the breaker
        ev.paused_until, ev.pause_reason, ev.failures_in_row = None, None, 0
    ev.updated_at = now
    session.flush()
    return ev


def out(session: Session, ev: Evaluator, *, now: datetime | None = None) -> EvaluatorOut:
    now = now or utcnow()
    usage = session.get(EvaluatorUsage, (ev.id, now.date()))
    counts = dict(
        session.execute(
            select(Evaluation.status, func.count())
            .where(Evaluation.evaluator_id == ev.id, Evaluation.version == ev.version)
            .group_by(Evaluation.status)
        ).all()
    )
    return EvaluatorOut(
        id=ev.id, name=ev.name, kind=ev.kind, score_name=ev.score_name, objective=ev.objective,
        version=ev.version, config=ev.config, has_api_key=bool(ev.api_key),
        selection=ev.selection, sample_rate=ev.sample_rate, delay_seconds=ev.delay_seconds,
        daily_calls=ev.daily_calls, daily_tokens=ev.daily_tokens, concurrency=ev.concurrency,
        timeout_seconds=ev.timeout_seconds, max_retries=ev.max_retries, enabled=ev.enabled,
        paused_until=ev.paused_until if ev.paused_until and ev.paused_until > now else None,
        pause_reason=ev.pause_reason if ev.paused_until and ev.paused_until > now else None,
        created_at=ev.created_at,
        usage_today=UsageOut(
            day=now.date().isoformat(), calls=usage.calls if usage else 0,
            tokens=usage.tokens if usage else 0, errors=usage.errors if usage else 0,
            daily_calls=ev.daily_calls, daily_tokens=ev.daily_tokens,
        ),
        counts={str(k): int(v) for k, v in counts.items()},
    )  # fmt: skip


def get(session: Session, *, project_id: int, evaluator_id: int) -> Evaluator | None:
    ev = session.get(Evaluator, evaluator_id)
    return ev if ev is not None and ev.project_id == project_id else None


def name_taken(session: Session, *, project_id: int, name: str) -> bool:
    """Whether the project has an evaluator named ``name`` (names are unique per project)."""
    return session.scalar(
        select(Evaluator.id).where(Evaluator.project_id == project_id, Evaluator.name == name)
    ) is not None


def list_all(session: Session, *, project_id: int) -> list[Evaluator]:
    return list(
        session.scalars(
            select(Evaluator).where(Evaluator.project_id == project_id).order_by(Evaluator.name)
        )
    )


def _range_traces(session: Session, ev: Evaluator, start: datetime, end: datetime) -> list[str]:
    sel = ev.selection or {}
    q = select(Trace.trace_id, Trace.attributes).where(
        Trace.project_id == ev.project_id, Trace.started_at >= start, Trace.started_at < end,
        Trace.derived_at.is_not(None),
    )  # fmt: skip
    if sel.get("agents"):
        q = q.where(Trace.agent.in_(sel["agents"]))
    if sel.get("versions"):
        q = q.where(Trace.agent_version.in_(sel["versions"]))
    if sel.get("sources"):
        q = q.where(Trace.source.in_(sel["sources"]))
    envs = sel.get("environments") or []
    return [
        tid
        for tid, attrs in session.execute(q.order_by(Trace.started_at).limit(BACKFILL_MAX + 1))
        if (not envs or environment(attrs) in envs) and sampled(tid, ev.sample_rate)
    ]


class BackfillOut(ResponseModel):
    traces: int = Field(description="traces of the range this version has not evaluated")
    calls: int = Field(description="calls it will take (0 for a check)")
    tokens_at_most: int = Field(description="the most tokens those calls can cost")
    days_of_budget: float = Field(description="days of the daily call budget it needs")
    queued: bool


def backfill(session: Session, ev: Evaluator, *, start: datetime, end: datetime,
             confirm: bool) -> BackfillOut:  # fmt: skip
    """The estimate of evaluating ``[start, end)`` with the current version; queued only
    with ``confirm`` (an estimate first, always)."""
    tids = _range_traces(session, ev, start, end)
    if len(tids) > BACKFILL_MAX:
        raise ValueError(
            f"end: the range holds over {BACKFILL_MAX:,} traces; backfill a shorter one"
        )
    done = set(
        session.scalars(
            select(Evaluation.trace_id).where(
                Evaluation.evaluator_id == ev.id, Evaluation.version == ev.version,
                Evaluation.trace_id.in_(tids),
            )  # fmt: skip
        )
    ) if tids else set()  # fmt: skip
    todo = [t for t in tids if t not in done]
    calls = len(todo) if ev.kind == "llm_judge" else 0
    per_call = 0
    if calls:
        from app.evaluators.content import load_contents
        from app.evaluators.judge import render, reservation
        from app.evaluators.spec import JudgeConfig, config_of

        config = config_of(ev.kind, ev.config)
        assert isinstance(config, JudgeConfig)
        sample = todo[:: max(1, len(todo) // 50)][:50]
        contents = load_contents(session, project_id=ev.project_id, trace_ids=sample)
        costs = [reservation(config, render(config, c)) for c in contents.values()]
        per_call = max(costs) if costs else config.max_output_tokens
    if confirm and todo:
        now = utcnow()
        insert = dialect_insert(session.get_bind().dialect.name, Evaluation)
        session.execute(
            insert.on_conflict_do_nothing(index_elements=["evaluator_id", "version", "trace_id"]),
            [
                {"project_id": ev.project_id, "evaluator_id": ev.id, "version": ev.version,
                 "trace_id": tid, "status": "pending", "due_at": now + timedelta(seconds=1),
                 "attempts": 0, "backfill": True, "tokens": 0, "created_at": now}
                for tid in todo
            ],
        )  # fmt: skip
    return BackfillOut(
        traces=len(todo), calls=calls, tokens_at_most=calls * per_call,
        days_of_budget=round(calls / ev.daily_calls, 2), queued=bool(confirm and todo),
    )  # fmt: skip
