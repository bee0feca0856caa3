"""The media job queue in the database: submit, claim with a lease, finish, retry, dead-letter.

Claims go through :func:`app.db.claim_rows` (``SKIP LOCKED`` on PostgreSQL, ``BEGIN
IMMEDIATE`` on SQLite), so a job has one live lease. Every later write names the lease
token, so a worker whose lease expired (and whose job was claimed again) changes nothing.
Embeddings are written with the event id ``media:<job id>``, so even a job embedded twice
after a lost lease stores one vector.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, and_, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from app.db import claim_rows, write_transaction
from app.models import Embedding
from app.models.base import utcnow
from app.models.media import MediaJob
from app.retry import Backoff

MJ = MediaJob


@dataclass(frozen=True)
class JobSpec:
    """A job to create; images carry the stored file's generated name."""

    stream: str
    sample_id: str
    kind: str  # image | text
    trace_id: str | None = None
    text: str | None = None
    file_name: str | None = None
    content_type: str | None = None
    size_bytes: int | None = None
    width: int | None = None
    height: int | None = None


@dataclass(frozen=True)
class SubmittedJob:
    id: int
    sample_id: str
    status: str
    created: bool  # False: the (stream, sample_id) job already existed


@dataclass(frozen=True)
class ClaimedJob:
    id: int
    project_id: int
    stream: str
    sample_id: str
    trace_id: str | None
    kind: str
    file_name: str | None
    content_type: str | None
    text: str | None
    attempts: int  # including this one
    lease_token: str


def existing_jobs(
    engine: Engine, *, project_id: int, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], SubmittedJob]:
    """Jobs already stored for ``(stream, sample_id)`` keys."""
    if not keys:
        return {}
    with engine.connect() as conn:
        rows = conn.execute(
            select(MJ.id, MJ.stream, MJ.sample_id, MJ.status).where(
                MJ.project_id == project_id,
                MJ.sample_id.in_(sorted({k[1] for k in keys})),
                MJ.stream.in_(sorted({k[0] for k in keys})),
            )
        ).all()
    return {(r.stream, r.sample_id): SubmittedJob(r.id, r.sample_id, r.status, False) for r in rows}


def submit_jobs(
    engine: Engine, *, project_id: int, specs: Sequence[JobSpec], now: datetime | None = None
) -> list[SubmittedJob]:
    """Create jobs, one per spec in order; a known ``(stream, sample_id)`` returns its job.

    Idempotent under races: the insert is ``ON CONFLICT DO NOTHING`` on the unique key and
    the loser reads the winner's row.
    """
    now = now or utcnow()
    out: list[SubmittedJob] = []
    with write_transaction(engine) as conn:
        dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
        for spec in specs:
            values = dict(
                project_id=project_id,
                stream=spec.stream,
                sample_id=spec.sample_id,
                trace_id=spec.trace_id,
                kind=spec.kind,
                file_name=spec.file_name,
                content_type=spec.content_type,
                size_bytes=spec.size_bytes,
                width=spec.width,
                height=spec.height,
                text=spec.text,
                status="pending",
                attempts=0,
                next_attempt_at=now,
                created_at=now,
                updated_at=now,
            )
            stmt = dialect.insert(MJ).values(**values).on_conflict_do_nothing().returning(MJ.id)
            new_id = conn.execute(stmt).scalar()
            if new_id is not None:
                out.append(SubmittedJob(int(new_id), spec.sample_id, "pending", True))
                continue
            row = conn.execute(
                select(MJ.id, MJ.status).where(
                    MJ.project_id == project_id,
                    MJ.stream == spec.stream,
                    MJ.sample_id == spec.sample_id,
                )
            ).one()
            out.append(SubmittedJob(row.id, spec.sample_id, row.status, False))
    return out


def _claimable(now: datetime) -> Any:
    return or_(
        and_(MJ.status == "pending", MJ.next_attempt_at <= now),
        and_(MJ.status == "running", MJ.lease_expires_at < now),
    )


def claim_jobs(
    engine: Engine,
    *,
    limit: int,
    lease_seconds: float,
    policy: Backoff,
    now: datetime | None = None,
) -> list[ClaimedJob]:
    """Lease up to ``limit`` due jobs (oldest due first) to one new lease token.

    A job whose lease expired after its last allowed attempt (its worker kept dying on it)
    is dead-lettered here instead of being handed out again.
    """
    now = now or utcnow()
    token = secrets.token_hex(16)
    expires = now + timedelta(seconds=lease_seconds)
    with write_transaction(engine) as conn:
        pick = (
            select(MJ.__table__)
            .where(_claimable(now))
            .order_by(MJ.next_attempt_at, MJ.id)
            .limit(limit)
        )
        rows = claim_rows(conn, pick)
        spent = [r.id for r in rows if r.attempts >= policy.max_attempts]
        if spent:
            conn.execute(
                update(MJ)
                .where(MJ.id.in_(spent))
                .values(
                    **_finished(
                        now,
                        "dead",
                        f"dead after {policy.max_attempts} attempts: the lease expired "
                        "before the job finished (the worker stopped or was too slow)",
                    )
                )
            )
        claimed = [r for r in rows if r.attempts < policy.max_attempts]
        if claimed:
            conn.execute(
                update(MJ)
                .where(MJ.id.in_([r.id for r in claimed]))
                .values(
                    status="running",
                    attempts=MJ.attempts + 1,
                    lease_token=token,
                    lease_expires_at=expires,
                    updated_at=now,
                )
            )
    return [
        ClaimedJob(
            id=r.id,
            project_id=r.project_id,
            stream=r.stream,
            sample_id=r.sample_id,
            trace_id=r.trace_id,
            kind=r.kind,
            file_name=r.file_name,
            content_type=r.content_type,
            text=r.text,
            attempts=r.attempts + 1,
            lease_token=token,
        )
        for r in claimed
    ]


def _unleased(now: datetime, **values: Any) -> dict[str, Any]:
    """A job's columns as its lease ends, with ``values`` (its next status and why)."""
    return {"lease_token": None, "lease_expires_at": None, "updated_at": now, **values}


def _finished(now: datetime, status: str, error: str | None, **values: Any) -> dict[str, Any]:
    """A job's columns as it ends for good: done, failed, or dead."""
    return _unleased(now, status=status, error=error, finished_at=now, **values)


def _leased(job_ids: Sequence[int], token: str) -> Any:
    return and_(MJ.id.in_(list(job_ids)), MJ.lease_token == token, MJ.status == "running")


def complete_jobs(
    engine: Engine, *, job_ids: Sequence[int], token: str, model: str, now: datetime | None = None
) -> int:
    """Mark jobs done and link each to its stored embedding (same stream, sample, model)."""
    if not job_ids:
        return 0
    now = now or utcnow()
    embedding_id = (
        select(func.max(Embedding.id))
        .where(
            Embedding.project_id == MJ.project_id,
            Embedding.stream == MJ.stream,
            Embedding.sample_id == MJ.sample_id,
            Embedding.model == model,
        )
        .scalar_subquery()
    )
    with write_transaction(engine) as conn:
        return _rowcount(
            conn,
            update(MJ)
            .where(_leased(job_ids, token))
            .values(**_finished(now, "done", None, model=model, embedding_id=embedding_id)),
        )


def fail_jobs(
    engine: Engine, *, errors: dict[int, str], token: str, now: datetime | None = None
) -> int:
    """Permanent failures (bad input): ``failed`` with the reason, never retried."""
    now = now or utcnow()
    count = 0
    with write_transaction(engine) as conn:
        for job_id, error in errors.items():
            count += _rowcount(
                conn,
                update(MJ)
                .where(_leased([job_id], token))
                .values(**_finished(now, "failed", error[:2000])),
            )
    return count


def retry_jobs(
    engine: Engine,
    *,
    jobs: Sequence[ClaimedJob],
    error: str,
    policy: Backoff,
    now: datetime | None = None,
) -> dict[str, int]:
    """Transient failures: back to ``pending`` after a backoff, or ``dead`` when spent."""
    now = now or utcnow()
    counts = {"retried": 0, "dead": 0}
    with write_transaction(engine) as conn:
        for job in jobs:
            if job.attempts >= policy.max_attempts:
                last = f"dead after {job.attempts} attempts; last error: {error}"
                values = _finished(now, "dead", last[:2000])
                outcome = "dead"
            else:
                values = _unleased(
                    now,
                    status="pending",
                    error=f"attempt {job.attempts} failed: {error}"[:2000],
                    next_attempt_at=now + timedelta(seconds=policy.seconds(job.attempts)),
                )
                outcome = "retried"
            stmt = update(MJ).where(_leased([job.id], job.lease_token)).values(**values)
            counts[outcome] += _rowcount(conn, stmt)
    return counts


def _rowcount(conn: Connection, stmt: Any) -> int:
    return int(conn.execute(stmt).rowcount or 0)
