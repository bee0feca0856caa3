"""Runs due evaluations: lease a batch of settled traces, judge it, write the scores.

A batch is one evaluator's: leased and its budget reserved in one transaction (the usage
row locked on PostgreSQL), judged concurrently (at most ``concurrency`` calls in flight,
asyncio, one thread), written in a second transaction. Every attempt is one call of the
budget, reserved before it is sent at its largest possible token cost and settled with
what the endpoint reports, so the day's calls and tokens are never passed; a call that
may succeed later (timeout, connection, 429, 5xx) goes back to the queue with backoff
until ``max_retries``. After :data:`BREAKER_AFTER` failed calls in a row the evaluator is
paused (the circuit breaker), first for :data:`PAUSE_FIRST`, doubling to
:data:`PAUSE_LONGEST`; the pause and its reason show on its page, in readiness and in
``/metrics``; the first batch after it is a single call.

Runs in the scheduler (:func:`evaluate_job`, in every scheduler process: leases keep
workers apart) and in ``telltale evaluate`` workers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.alerts.outbound import OutboundPolicy
from app.db import write_session
from app.evaluators import queue
from app.evaluators.checks import Verdict, run_check
from app.evaluators.content import TraceContent, load_contents
from app.evaluators.judge import AnswerError, CallError, JudgeClient, render, reservation
from app.evaluators.sessions import enqueue_idle_sessions, load_session_contents
from app.evaluators.spec import CheckConfig, JudgeConfig, config_of
from app.models.base import utcnow
from app.models.evaluators import Evaluator
from app.settings import Settings

log = logging.getLogger(__name__)

EVALUATE_EVERY_SECONDS = 10
BREAKER_AFTER = 5
PAUSE_FIRST = timedelta(minutes=1)
PAUSE_LONGEST = timedelta(hours=1)
BATCH_PER_SLOT = 4  # a batch leases this many evaluations per concurrent call
MAX_BATCH = 512


def judge_policy(settings: Settings) -> OutboundPolicy:
    return OutboundPolicy.from_allow([*settings.outbound_allow, *settings.judge_allow])


@dataclass
class RunStats:
    done: int = 0
    errors: int = 0
    retried: int = 0
    calls: int = 0
    tokens: int = 0
    paused: list[str] = field(default_factory=list)

    def add(self, other: RunStats) -> None:
        for name in ("done", "errors", "retried", "calls", "tokens"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.paused += other.paused


def _backoff(attempts: int) -> timedelta:
    return timedelta(seconds=min(600.0, 5.0 * 2 ** max(0, attempts - 1)))


@dataclass
class _Job:
    lease: queue.Lease
    messages: list[dict[str, str]]
    reserved: int


@dataclass
class _Snapshot:
    """What the calls need of the evaluator, read inside the lease transaction."""

    config: JudgeConfig
    api_key: str | None
    timeout: float
    concurrency: int
    max_retries: int


async def _judge_all(snap: _Snapshot, jobs: list[_Job], policy: OutboundPolicy) -> list[Any]:
    client = JudgeClient.open(snap.config, api_key=snap.api_key, timeout=snap.timeout,
                              policy=policy, concurrency=snap.concurrency)  # fmt: skip
    gate = asyncio.Semaphore(snap.concurrency)

    async def one(job: _Job) -> tuple[Any, float]:
        async with gate:
            started = time.perf_counter()
            try:
                got: Any = await client.judge(snap.config, job.messages)
            except (AnswerError, CallError) as exc:
                got = exc
            return got, (time.perf_counter() - started) * 1000.0

    try:
        return await asyncio.gather(*(one(j) for j in jobs))
    finally:
        await client.close()


def _check_batch(session: Session, ev: Evaluator, leases: list[queue.Lease],
                 contents: dict[str, TraceContent], now: datetime) -> RunStats:  # fmt: skip
    config = config_of(ev.kind, ev.config)
    assert isinstance(config, CheckConfig)
    outcomes = []
    for lease in leases:
        content = contents.get(lease.trace_id)
        if content is None:
            outcomes.append(queue.Outcome(lease, "error", error="the trace is no longer stored"))
            continue
        v = run_check(config, content)
        outcomes.append(queue.Outcome(lease, "done", v.value, v.label, v.reason, latency_ms=0.0))
    queue.complete(session, ev, outcomes, now=now)
    done = sum(o.status == "done" for o in outcomes)
    return RunStats(done=done, errors=len(outcomes) - done)


def contents_of(session: Session, ev: Evaluator, trace_ids: list[str]) -> dict[str, TraceContent]:
    """What ``ev`` reads of each trace: the trace, or for a session evaluator the whole
    session ending with it (:mod:`app.evaluators.sessions`)."""
    if (ev.selection or {}).get("scope") == "session":
        return load_session_contents(session, project_id=ev.project_id, last_turns=trace_ids)
    return load_contents(session, project_id=ev.project_id, trace_ids=trace_ids)


def run_batch(engine: Engine, evaluator_id: int, *, policy: OutboundPolicy,
              now: datetime | None = None) -> RunStats:  # fmt: skip
    """Lease, judge and write one batch of ``evaluator_id``; empty stats when none is due."""
    now = now or utcnow()
    day = now.date()
    with write_session(engine) as session:
        ev = session.get(Evaluator, evaluator_id)
        if ev is None or not ev.enabled or (ev.paused_until is not None and ev.paused_until > now):
            return RunStats()
        size = min(MAX_BATCH, ev.concurrency * BATCH_PER_SLOT)
        if ev.paused_until is not None:  # half open: one call tells whether it is back
            size = 1
        if ev.kind == "check":
            leases = queue.claim(session, ev, now=now, limit=size)
            if not leases:
                return RunStats()
            contents = contents_of(session, ev, [x.trace_id for x in leases])
            return _check_batch(session, ev, leases, contents, now)
        calls_left, tokens_left = queue.budget_left(session, ev, day=day, lock=True)
        leases = queue.claim(session, ev, now=now, limit=min(size, calls_left))
        if not leases:
            return RunStats()
        config = config_of(ev.kind, ev.config)
        assert isinstance(config, JudgeConfig)
        contents = contents_of(session, ev, [x.trace_id for x in leases])
        jobs: list[_Job] = []
        gone: list[queue.Outcome] = []
        spare: list[queue.Lease] = []
        reserved = 0
        for lease in leases:
            content = contents.get(lease.trace_id)
            if content is None:
                gone.append(queue.Outcome(lease, "error", error="the trace is no longer stored"))
                continue
            messages = render(config, content)
            need = reservation(config, messages)
            if reserved + need > tokens_left:
                spare.append(lease)
                continue
            jobs.append(_Job(lease, messages, need))
            reserved += need
        queue.release(session, spare)
        queue.complete(session, ev, gone, now=now)
        queue.spend(session, ev, day=day, calls=len(jobs), tokens=reserved)
        snap = _Snapshot(config, ev.api_key, ev.timeout_seconds, ev.concurrency, ev.max_retries)
    stats = RunStats(errors=len(gone))
    if not jobs:
        return stats
    results = asyncio.run(_judge_all(snap, jobs, policy))
    finished = utcnow() if now is None else now
    outcomes: list[queue.Outcome] = []
    used_tokens = 0
    failed_calls: list[str] = []
    succeeded = False
    for job, (got, ms) in zip(jobs, results, strict=True):
        if isinstance(got, Verdict):
            used_tokens += got.tokens
            succeeded = True
            outcomes.append(queue.Outcome(job.lease, "done", got.value, got.label, got.reason,
                                          tokens=got.tokens, latency_ms=ms))  # fmt: skip
        elif isinstance(got, AnswerError):
            used_tokens += got.tokens
            succeeded = True  # the endpoint works; the answer did not parse
            outcomes.append(queue.Outcome(job.lease, "error", error=f"answer: {got}"[:500],
                                          tokens=got.tokens, latency_ms=ms))  # fmt: skip
        else:
            assert isinstance(got, CallError)
            failed_calls.append(str(got))
            if got.retry and job.lease.attempts <= snap.max_retries:
                outcomes.append(queue.Outcome(job.lease, "retry", error=str(got)[:500],
                                              due_at=finished + _backoff(job.lease.attempts)))  # fmt: skip
            else:
                outcomes.append(queue.Outcome(job.lease, "error", error=f"call: {got}"[:500],
                                              latency_ms=ms))  # fmt: skip
    with write_session(engine) as session:
        ev = session.get(Evaluator, evaluator_id)
        if ev is None:
            return stats
        queue.complete(session, ev, outcomes, now=finished)
        # Settle the reservation: every call was made; tokens as the endpoint counted them.
        queue.spend(session, ev, day=day, calls=0, tokens=used_tokens - reserved,
                    errors=sum(o.status != "done" for o in outcomes))  # fmt: skip
        _breaker(ev, succeeded=succeeded, failed_calls=failed_calls, now=finished)
        if ev.pause_reason and ev.paused_until and ev.paused_until > finished:
            stats.paused.append(ev.name)
    stats.calls = len(jobs)
    stats.tokens = used_tokens
    stats.done = sum(o.status == "done" for o in outcomes)
    stats.errors += sum(o.status == "error" for o in outcomes)
    stats.retried = sum(o.status == "retry" for o in outcomes)
    return stats


def _breaker(ev: Evaluator, *, succeeded: bool, failed_calls: list[str], now: datetime) -> None:
    """Count failed calls in a row; pause the evaluator when they reach BREAKER_AFTER."""
    if succeeded:
        ev.failures_in_row = 0
        if ev.paused_until is not None:
            ev.paused_until, ev.pause_reason = None, None
        return
    if not failed_calls:
        return
    ev.failures_in_row += len(failed_calls)
    if ev.failures_in_row < BREAKER_AFTER:
        return
    previous = ev.paused_until is not None
    pause = PAUSE_FIRST
    if previous and ev.pause_reason:
        # Failing again right after a pause: twice as long, up to the longest.
        last = ev.failures_in_row // BREAKER_AFTER
        pause = min(PAUSE_LONGEST, PAUSE_FIRST * 2 ** min(10, last))
    ev.paused_until = now + pause
    ev.pause_reason = (
        f"{ev.failures_in_row} calls in a row failed (last: {failed_calls[-1][:200]}); "
        f"paused until {ev.paused_until:%H:%M} UTC, then one call tries again"
    )
    ev.updated_at = now


def run_due(engine: Engine, settings: Settings, *, now: datetime | None = None,
            max_seconds: float = 8.0, policy: OutboundPolicy | None = None) -> RunStats:  # fmt: skip
    """Run batches of every enabled evaluator until nothing is due or ``max_seconds``
    passed (the derive job queued the traces). A fixed ``now`` (a simulated clock) runs
    until nothing more is due at it."""
    policy = policy or judge_policy(settings)
    at = now or utcnow()
    stats = RunStats()
    with write_session(engine) as session:
        queue.reap(session, now=at)
        ids = []
        for ev in session.scalars(select(Evaluator).where(Evaluator.enabled.is_(True))):
            ids.append(ev.id)
            if (ev.selection or {}).get("scope") == "session":
                enqueue_idle_sessions(session, ev, now=at)
    deadline = time.monotonic() + max_seconds
    while ids and time.monotonic() < deadline:
        busy = []
        for ev_id in ids:
            try:
                got = run_batch(engine, ev_id, policy=policy, now=now)
            except Exception:  # one evaluator's failure never stops the others
                log.exception("evaluator %s: batch failed", ev_id)
                continue
            stats.add(got)
            if got.calls or got.done or got.errors:
                busy.append(ev_id)
        ids = busy
    return stats


def evaluate_job(engine: Engine, sessionmaker: Any, settings: Settings) -> None:
    """The scheduler's periodic job (every :data:`EVALUATE_EVERY_SECONDS`)."""
    del sessionmaker
    run_due(engine, settings, max_seconds=EVALUATE_EVERY_SECONDS * 0.8)


@dataclass
class TryOut:
    """One evaluation of one trace, not stored: what the judge was sent and what came back."""

    messages: list[dict[str, str]]
    value: float | None = None
    label: str | None = None
    reason: str | None = None
    error: str | None = None
    tokens: int = 0
    latency_ms: float | None = None


def try_on_trace(content: TraceContent, kind: str, config: JudgeConfig | CheckConfig, *,
                 api_key: str | None, timeout: float, policy: OutboundPolicy) -> TryOut:  # fmt: skip
    """Evaluate ``content`` once and say exactly what happened (the settings page's test)."""
    if kind == "check":
        assert isinstance(config, CheckConfig)
        v = run_check(config, content)
        return TryOut([], v.value, v.label, v.reason, latency_ms=0.0)
    assert isinstance(config, JudgeConfig)
    messages = render(config, content)
    snap = _Snapshot(config, api_key, timeout, 1, 0)
    [(got, ms)] = asyncio.run(_judge_all(snap, [_Job(queue.Lease(0, "", "", 0, 1), messages, 0)],
                                         policy))  # fmt: skip
    if isinstance(got, Verdict):
        return TryOut(messages, got.value, got.label, got.reason, tokens=got.tokens, latency_ms=ms)
    tokens = got.tokens if isinstance(got, AnswerError) else 0
    kind_of = "answer" if isinstance(got, AnswerError) else "call"
    return TryOut(messages, error=f"{kind_of}: {got}", tokens=tokens, latency_ms=ms)
