"""The evaluations queue in the database: what is due, who holds it, what it wrote.

* **Enqueue.** The derive job queues each trace it derives (:func:`app.derive.evaluations.enqueue_derived`, in
  its transaction), for every enabled evaluator whose selection takes it and whose sample
  holds it (a hash of the trace id: the same traces for every version, so versions
  compare on the same traffic), however late the trace arrived. ``(evaluator, version,
  trace)`` is unique: a trace derived again is not queued again.
* **Settled.** A queued trace is taken once nothing arrived for it for ``delay_seconds``:
  it is still derived (a new span clears ``derived_at``) and was derived that long ago.
* **Claim.** Due rows are leased with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL (so several
  workers take disjoint rows), under SQLite's single writer lock there; each lease has a
  token. A lease older than :data:`LEASE_SECONDS` returns to the queue (at least once).
* **Complete.** The outcome is written only where the row still holds this lease's token,
  and the score in the same transaction: a result that lost its lease (the worker was
  presumed dead and the row re-run) writes nothing, so a trace is never scored twice by
  one evaluator version.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, and_, or_, select, update
from sqlalchemy.orm import Session

from app.db import claim_rows, dialect_insert
from app.models import Score, Trace
from app.models.evaluators import Evaluation, Evaluator, EvaluatorUsage
from app.models.rollups import mark_scored

LEASE_SECONDS = 900
# A pending evaluation this old that the budget never let run is dropped, not run stale.
STALE_AFTER = timedelta(days=1)


def _rowcount(result: Any) -> int:
    """Rows an UPDATE matched (a CursorResult's ``rowcount``; typed as a plain Result)."""
    return max(int(cast(CursorResult[Any], result).rowcount), 0)


def reap(session: Session, *, now: datetime) -> int:
    """Leases older than :data:`LEASE_SECONDS` go back to the queue; stale ones are dropped."""
    back = _rowcount(session.execute(
        update(Evaluation)
        .where(Evaluation.status == "running",
               Evaluation.claimed_at < now - timedelta(seconds=LEASE_SECONDS))
        .values(status="pending", claim_token=None, claimed_at=None)
    ))  # fmt: skip
    session.execute(
        update(Evaluation)
        .where(Evaluation.status == "pending", Evaluation.backfill.is_(False),
               Evaluation.due_at < now - STALE_AFTER)
        .values(status="skipped", error="not run within a day (the daily budget was spent)",
                finished_at=now)
    )  # fmt: skip
    return back


@dataclass
class Lease:
    id: int
    token: str
    trace_id: str
    version: int
    attempts: int


def claim(session: Session, ev: Evaluator, *, now: datetime, limit: int) -> list[Lease]:
    """Lease up to ``limit`` due evaluations of ``ev``'s current version (oldest first)."""
    e = Evaluation.__table__.c
    settled_by = now - timedelta(seconds=ev.delay_seconds)
    pick = (
        select(e.id, e.trace_id, e.version, e.attempts)
        .outerjoin(Trace, and_(Trace.project_id == e.project_id, Trace.trace_id == e.trace_id))
        .where(e.evaluator_id == ev.id, e.version == ev.version, e.status == "pending",
               e.due_at <= now,
               # Settled: nothing arrived since it was derived that long ago (a new span
               # clears derived_at). A trace no longer stored is taken, and said so.
               or_(Trace.id.is_(None),
                   and_(Trace.derived_at.is_not(None), Trace.derived_at <= settled_by)))
        .order_by(e.due_at, e.id)
        .limit(limit)
    )  # fmt: skip
    rows = claim_rows(session, pick, of=Evaluation.__table__)
    if not rows:
        return []
    token = secrets.token_hex(16)
    session.execute(
        update(Evaluation)
        .where(Evaluation.id.in_([r[0] for r in rows]))
        .values(status="running", claim_token=token, claimed_at=now,
                attempts=Evaluation.attempts + 1)
    )  # fmt: skip
    return [Lease(r.id, token, r.trace_id, r.version, r.attempts + 1) for r in rows]


def release(session: Session, leases: Iterable[Lease]) -> None:
    """Give leases back untouched (the budget let none of them run)."""
    for lease in leases:
        session.execute(
            update(Evaluation)
            .where(Evaluation.id == lease.id, Evaluation.claim_token == lease.token)
            .values(status="pending", claim_token=None, claimed_at=None,
                    attempts=Evaluation.attempts - 1)
        )  # fmt: skip


@dataclass
class Outcome:
    lease: Lease
    status: str  # done | error | retry (back to the queue at due_at)
    value: float | None = None
    label: str | None = None
    reason: str | None = None
    error: str | None = None
    tokens: int = 0
    latency_ms: float | None = None
    due_at: datetime | None = None


def complete(session: Session, ev: Evaluator, outcomes: Sequence[Outcome], *, now: datetime) -> int:
    """Write each outcome still under its lease, and its score; how many were written."""
    written = 0
    scored: list[str] = []
    for o in outcomes:
        held = update(Evaluation).where(
            Evaluation.id == o.lease.id, Evaluation.claim_token == o.lease.token,
            Evaluation.status == "running",
        )  # fmt: skip
        if o.status == "retry":
            session.execute(held.values(status="pending", due_at=o.due_at, error=o.error,
                                        claim_token=None, claimed_at=None))  # fmt: skip
            continue
        res = session.execute(
            held.values(status=o.status, value=o.value, label=o.label, reason=o.reason,
                    error=o.error, tokens=o.tokens, latency_ms=o.latency_ms, finished_at=now,
                    claim_token=None)
        )  # fmt: skip
        if _rowcount(res) != 1:
            continue
        written += 1
        if o.status == "done" and o.value is not None:
            session.add(
                Score(project_id=ev.project_id, trace_id=o.lease.trace_id, name=ev.score_name,
                      value=o.value, kind="proxy", source="online", label=o.label,
                      explanation=o.reason, created_at=now)
            )  # fmt: skip
            scored.append(o.lease.trace_id)
    session.flush()
    if scored:  # the score rollups of those traces' buckets are rebuilt (app/rollups)
        mark_scored(session.connection(), project_id=ev.project_id, trace_ids=scored)
    return written


# ---- the daily budget -------------------------------------------------------------------


def budget_left(session: Session, ev: Evaluator, *, day: date, lock: bool) -> tuple[int, int]:
    """(calls, tokens) ``ev`` may still spend on ``day``; the usage row locked if asked."""
    insert = dialect_insert(session.get_bind().dialect.name, EvaluatorUsage)
    session.execute(
        insert.values(
            evaluator_id=ev.id, day=day, calls=0, tokens=0, errors=0
        ).on_conflict_do_nothing(index_elements=["evaluator_id", "day"])
    )
    q = select(EvaluatorUsage.calls, EvaluatorUsage.tokens).where(
        EvaluatorUsage.evaluator_id == ev.id, EvaluatorUsage.day == day
    )
    if lock and session.get_bind().dialect.name == "postgresql":
        q = q.with_for_update()
    calls, tokens = session.execute(q).one()
    return max(0, ev.daily_calls - calls), max(0, ev.daily_tokens - tokens)


def spend(session: Session, ev: Evaluator, *, day: date, calls: int, tokens: int,
          errors: int = 0) -> None:  # fmt: skip
    """Add to (or, with negative figures, give back to) the day's use."""
    session.execute(
        update(EvaluatorUsage)
        .where(and_(EvaluatorUsage.evaluator_id == ev.id, EvaluatorUsage.day == day))
        .values(calls=EvaluatorUsage.calls + calls, tokens=EvaluatorUsage.tokens + tokens,
                errors=EvaluatorUsage.errors + errors)
    )  # fmt: skip
