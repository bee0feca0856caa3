"""The fill job: pick the samples most worth labeling and add them to a queue.

Per stream, candidates are the newest embeddings not yet queued and not yet labeled;
anchors are the stream's earliest embeddings (the reference) plus everything already
queued or labeled. ``select_for_active_learning`` (k-center greedy) picks candidates far
from every anchor and from each other, with distances weighted ×2 for samples inside a
window where FM-6, FM-4 or OUTCOME fired. FM-4 "needs labels" requests add unlabeled traces of
the cohorts it named, and judge checks (:mod:`app.labeling.judge_checks`) judged traces of an
evaluator whose objective the queue labels. ``(queue_id, sample_key)`` is unique, so racing fills never duplicate.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import Engine, and_, exists, false, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from app.db import write_transaction
from app.labeling import boosts
from app.labeling.judge_checks import judge_check_traces
from app.labeling.requests import requested_traces
from app.models import Embedding, Score, Trace
from app.models.base import utcnow
from app.models.labeling import LabelQueue, QueueItem
from detectors.active_learning import select_for_active_learning

log = logging.getLogger("telltale.labeling")

CANDIDATE_LIMIT = 50_000
LABEL_SOURCES = ("delayed", "human")


@dataclass
class FillResult:
    queue: str
    added: int = 0
    from_selector: int = 0
    from_label_requests: int = 0
    judge_checks: int = 0
    boosted: int = 0
    candidates: int = 0
    budget_left: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Picker:
    """One fill's selector: the queue it picks for, in which session, with what limits, and
    the result its counts and notes go to. Shared by the per-queue and per-stream steps."""

    session: Session
    queue: LabelQueue
    candidate_limit: int
    backend: str
    result: FillResult


def sample_key(*, trace_id: str | None, embedding_id: int) -> str:
    """One key per labelable thing: a trace (however many embeddings it has) or a vector."""
    return f"trace:{trace_id}" if trace_id else f"emb:{embedding_id}"


def fill_queue(
    engine: Engine,
    *,
    queue_id: int,
    now: datetime | None = None,
    candidate_limit: int = CANDIDATE_LIMIT,
    backend: str = "auto",
) -> FillResult:
    """Add up to the queue's remaining budget for the current period; return what was done."""
    now = now or utcnow()
    with Session(engine) as session:
        queue = session.get(LabelQueue, queue_id)
        if queue is None:
            raise LookupError(f"queue {queue_id} does not exist")
        result = FillResult(queue=queue.name)
        period_start = now - timedelta(seconds=queue.fill_interval_seconds)
        used = session.scalar(
            select(func.count())
            .select_from(QueueItem)
            .where(QueueItem.queue_id == queue.id, QueueItem.created_at > period_start)
        )
        budget = queue.budget_per_period
        remaining = budget - int(used or 0)
        rows: list[dict[str, Any]] = []
        if remaining > 0:
            sel = queue.selection
            share = remaining if not sel.get("streams") else max(1, remaining // 2)
            rows = requested_traces(session, queue=queue, now=now, limit=share)
            result.from_label_requests = len(rows)
            checks = judge_check_traces(session, queue=queue, now=now,
                                        limit=max(1, (remaining - len(rows)) // 4))  # fmt: skip
            taken_keys = {r["sample_key"] for r in rows}
            checks = [r for r in checks if r["sample_key"] not in taken_keys]
            result.judge_checks = len(checks)
            rows += checks
            taken = {r["sample_key"] for r in rows}
            picker = _Picker(session, queue, candidate_limit, backend, result)
            picks = _select(picker, remaining - len(rows), taken)
            result.from_selector = len(picks)
            rows += picks
    for r in rows:
        r.update(project_id=queue.project_id, queue_id=queue.id, created_at=now, status="pending")
    with write_transaction(engine) as conn:
        # Recount under the lock (the queue row on PostgreSQL, the writer lock on SQLite):
        # a fill that raced this one may have used the budget since the count above.
        lock = select(LabelQueue.id).where(LabelQueue.id == queue.id)
        conn.execute(lock.with_for_update() if conn.dialect.name == "postgresql" else lock)
        used_now = conn.scalar(
            select(func.count())
            .select_from(QueueItem)
            .where(QueueItem.queue_id == queue.id, QueueItem.created_at > period_start)
        )
        rows = sorted(rows, key=lambda r: -r["priority"])[: max(0, budget - int(used_now or 0))]
        if rows:
            dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
            stmt = dialect.insert(QueueItem).on_conflict_do_nothing().returning(QueueItem.id)
            result.added = len(conn.execute(stmt, rows).scalars().all())
        conn.execute(update(LabelQueue).where(LabelQueue.id == queue.id).values(last_filled_at=now))
    result.boosted = sum(1 for r in rows if r["boost"] > 1.0)
    result.budget_left = max(0, remaining - result.added)
    return result


def _streams(queue: LabelQueue) -> list[str]:
    sel = queue.selection
    # A queue of agents without streams: their input embeddings (pipelines convention).
    return list(sel.get("streams") or [f"{a}.input" for a in sel.get("agents") or []])


def _select(picker: _Picker, budget: int, taken: set[str]) -> list[dict[str, Any]]:
    if budget <= 0:
        return []
    picks: list[dict[str, Any]] = []
    for stream in _streams(picker.queue):
        try:
            picks += _select_stream(picker, stream, budget, taken)
        except ValueError as exc:  # e.g. a stream whose vectors are malformed
            log.warning("queue %s: stream %s skipped: %s", picker.queue.name, stream, exc)
            picker.result.notes.append(f"stream {stream}: {exc}")
    # Novelty is a distance within each stream; across streams, priority orders them.
    picks.sort(key=lambda r: -r["priority"])
    out: list[dict[str, Any]] = []
    for r in picks:
        if r["sample_key"] not in taken and len(out) < budget:
            taken.add(r["sample_key"])
            out.append(r)
    return out


def _vectors(blobs: list[bytes], dim: int) -> np.ndarray:
    if not blobs:
        return np.empty((0, dim), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dim)


def _select_stream(
    picker: _Picker, stream: str, budget: int, taken: set[str]
) -> list[dict[str, Any]]:
    session, queue = picker.session, picker.queue
    pid, E = queue.project_id, Embedding
    in_stream = and_(E.project_id == pid, E.stream == stream)
    total = int(session.scalar(select(func.count()).select_from(E).where(in_stream)) or 0)
    dim = session.scalar(select(E.dim).where(in_stream).limit(1))
    if total == 0 or dim is None:
        return []
    ref_n = min(queue.reference_size, total // 2)
    ref = session.execute(
        select(E.id, E.vector, E.created_at)
        .where(in_stream)
        .order_by(E.created_at, E.id)
        .limit(ref_n)
    ).all()
    reference = _vectors([r.vector for r in ref], dim)

    queued = exists().where(
        QueueItem.queue_id == queue.id,
        or_(QueueItem.embedding_id == E.id, QueueItem.trace_id == E.trace_id),
    )
    labeled = exists().where(
        Score.project_id == pid,
        Score.trace_id == E.trace_id,
        Score.kind == "true",
        Score.source.in_(LABEL_SOURCES),
    )
    q = (
        select(
            E.id, E.vector, E.trace_id, E.sample_id, E.created_at, Trace.agent, labeled.label("lab")
        )
        .outerjoin(Trace, and_(Trace.project_id == pid, Trace.trace_id == E.trace_id))
        .where(in_stream, ~queued)
    )
    if ref:
        last = ref[-1]
        q = q.where(
            or_(
                E.created_at > last.created_at,
                and_(E.created_at == last.created_at, E.id > last.id),
            )
        )
    sel = queue.selection
    if sel.get("agents"):
        q = q.where(Trace.agent.in_(sel["agents"]))
    if sel.get("sources"):
        # Samples without a trace (e.g. VLM media) count as production traffic.
        unlinked = Trace.id.is_(None) if "production" in sel["sources"] else false()
        q = q.where(or_(Trace.source.in_(sel["sources"]), unlinked))
    rows = session.execute(
        q.order_by(E.created_at.desc(), E.id.desc()).limit(picker.candidate_limit)
    ).all()

    anchors_q = (
        select(E.vector)
        .join(QueueItem, QueueItem.embedding_id == E.id)
        .where(QueueItem.queue_id == queue.id, E.stream == stream)
    )
    anchor_blobs = list(session.scalars(anchors_q)) + [r.vector for r in rows if r.lab]
    cands, seen = [], set(taken)
    for r in rows:
        key = sample_key(trace_id=r.trace_id, embedding_id=r.id)
        if not r.lab and key not in seen:
            seen.add(key)
            cands.append((key, r))
    picker.result.candidates += len(cands)
    if not cands:
        return []
    times = [r.created_at for _, r in cands]
    windows = boosts.fired_windows(session, project_id=pid, start=min(times), end=max(times))
    weights, why = [], []
    for _, r in cands:
        w, window = boosts.boost_for(windows, stream=stream, agent=r.agent, time=r.created_at)
        weights.append(w)
        why.append(window)
    selection = select_for_active_learning(
        _vectors([r.vector for _, r in cands], dim),
        min(budget, len(cands)),
        reference=reference if len(reference) else None,
        labeled=_vectors(anchor_blobs, dim) if anchor_blobs else None,
        priority=np.asarray(weights) if any(w != 1.0 for w in weights) else None,
        backend=picker.backend,
    )
    out = []
    for idx, novelty in zip(selection.indices.tolist(), selection.novelty.tolist(), strict=True):
        key, r = cands[idx]
        reason = f"novelty {novelty:.3f} in stream {stream}"
        if why[idx] is not None:
            reason += f"; boosted ×{weights[idx]:g}: {why[idx].describe()}"
        out.append(
            {
                "sample_key": key,
                "embedding_id": r.id,
                "stream": stream,
                "trace_id": r.trace_id,
                "sample_id": r.sample_id,
                "sample_time": r.created_at,
                "novelty": float(novelty),
                "boost": float(weights[idx]),
                "priority": float(novelty) * float(weights[idx]),
                "reason": reason,
            }
        )
    return out
