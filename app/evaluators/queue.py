"""The evaluations queue in the database: what is due, who holds it, what it wrote.

* **Enqueue.** A trace is due for an evaluator once it has settled: derived, and nothing
  arrived for ``delay_seconds`` (a new span clears ``derived_at``). Traces are looked for
  by start time from the evaluator's mark (``scanned_until``), which stops at the first
  trace not settled yet (never more than :data:`LOOKBACK` back), filtered by the
  selection and sampled by a hash of the trace id (the same traces for every version, so
  versions compare on the same traffic). ``(evaluator, version, trace)`` is unique: a
  second enqueue of the same trace is a no-op.
* **Claim.** Due rows are leased with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL (so several
  workers take disjoint rows), under SQLite's single writer lock there; each lease has a
  token. A lease older than :data:`LEASE_SECONDS` returns to the queue (at least once).
* **Complete.** The outcome is written only where the row still holds this lease's token,
  and the score in the same transaction: a result that lost its lease (the worker was
  presumed dead and the row re-run) writes nothing, so a trace is never scored twice by
  one evaluator version.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, and_, exists, select, update
from sqlalchemy.orm import Session

from app.db import claim_rows, dialect_insert
from app.models import Score, Trace
from app.models.evaluators import Evaluation, Evaluator, EvaluatorUsage

LOOKBACK = timedelta(hours=6)
LEASE_SECONDS = 900
SCAN_LIMIT = 5_000
# A pending evaluation this old that the budget never let run is dropped, not run stale.
STALE_AFTER = timedelta(days=1)


def _rowcount(result: Any) -> int:
    """Rows an UPDATE matched (a CursorResult's ``rowcount``; typed as a plain Result)."""
    return max(int(cast(CursorResult[Any], result).rowcount), 0)


def sampled(trace_id: str, rate: float) -> bool:
    """Whether ``trace_id`` falls in the sample: a hash, so every run and replica agrees.

    >>> sampled("abc", 1.0), sampled("abc", 1e-9)
    (True, False)
    """
    if rate >= 1.0:
        return True
    h = int.from_bytes(hashlib.sha256(trace_id.encode()).digest()[:8], "big")
    return h / 2**64 < rate


def _environment(attrs: dict[str, object] | None) -> str | None:
    attrs = attrs or {}
    env = attrs.get("resource.deployment.environment.name") or attrs.get(
        "resource.deployment.environment"
    )
    return None if env is None else str(env)


def enqueue_due(session: Session, ev: Evaluator, *, now: datetime) -> int:
    """Queue the settled traces of ``ev``'s selection it has not seen; how many."""
    settled_by = now - timedelta(seconds=ev.delay_seconds)
    lo = max(ev.watch_from, ev.scanned_until or ev.watch_from, now - LOOKBACK)
    sel = ev.selection or {}
    q = select(
        Trace.trace_id, Trace.started_at, Trace.derived_at, Trace.attributes
        if sel.get("environments") else Trace.id,
    ).where(
        Trace.project_id == ev.project_id, Trace.started_at >= lo, Trace.started_at <= now,
        ~exists().where(
            Evaluation.evaluator_id == ev.id, Evaluation.version == ev.version,
            Evaluation.trace_id == Trace.trace_id,
        ),
    )  # fmt: skip
    if sel.get("agents"):
        q = q.where(Trace.agent.in_(sel["agents"]))
    if sel.get("versions"):
        q = q.where(Trace.agent_version.in_(sel["versions"]))
    if sel.get("sources"):
        q = q.where(Trace.source.in_(sel["sources"]))
    rows = session.execute(q.order_by(Trace.started_at).limit(SCAN_LIMIT)).all()
    due: list[str] = []
    mark: datetime | None = None
    for trace_id, started, derived, extra in rows:
        if derived is None or derived > settled_by:
            mark = started if mark is None else mark
            continue
        if sel.get("environments") and _environment(extra) not in sel["environments"]:
            continue
        if sampled(trace_id, ev.sample_rate):
            due.append(trace_id)
    if mark is None:
        mark = rows[-1][1] if len(rows) == SCAN_LIMIT else settled_by
    ev.scanned_until = max(lo, min(mark, settled_by))
    if due:
        insert = dialect_insert(session.get_bind().dialect.name, Evaluation)
        session.execute(
            insert.on_conflict_do_nothing(index_elements=["evaluator_id", "version", "trace_id"]),
            [
                {"project_id": ev.project_id, "evaluator_id": ev.id, "version": ev.version,
                 "trace_id": tid, "status": "pending", "due_at": now, "attempts": 0,
                 "backfill": False, "tokens": 0, "created_at": now}
                for tid in due
            ],
        )  # fmt: skip
    return len(due)


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
    pick = (
        select(Evaluation.__table__.c.id, Evaluation.__table__.c.trace_id,
               Evaluation.__table__.c.version, Evaluation.__table__.c.attempts)
        .where(Evaluation.evaluator_id == ev.id, Evaluation.version == ev.version,
               Evaluation.status == "pending", Evaluation.due_at <= now)
        .order_by(Evaluation.due_at, Evaluation.id)
        .limit(limit)
    )  # fmt: skip
    rows = claim_rows(session, pick)
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
    session.flush()
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
