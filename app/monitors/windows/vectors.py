"""FM-6's windows: the embedding streams a monitor tests, and each stream's vectors in a
time range, as float32 matrices; beyond ``DEFAULT_MAX_VECTORS`` a uniform sample by a hash
of the row id over the whole window (never the newest rows)."""

from __future__ import annotations

import fnmatch
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db import one_of
from app.models import Embedding, EmbeddingStream
from app.monitors.windows import rows as window_rows
from app.monitors.windows import sampling

DEFAULT_MAX_VECTORS = 50_000


TRACE_STREAM_SUFFIXES = (".input", ".output")
# FM-6 watches the ``<agent>.input`` text streams too (new topics or wording in what users
# send, with error rates flat, is the silent degradation it is for); the ``.output``
# streams are FM-3's, read per input identity with their traces.
FM6_SKIPPED_SUFFIXES = (".output",)


def embedding_streams(
    session: Session, *, project_id: int, stream: str | None, agent: str | None
) -> list[str]:
    """The streams an FM-6 run tests.

    ``stream`` may be a name or a glob (``vlm.*``). Without one: every stream of the
    project (of ``agent``, when given) except the per-trace ``<agent>.output`` streams,
    which FM-3 reads with its traces (the ``<agent>.input`` streams are FM-6's as well as
    FM-5's).
    """
    q = select(EmbeddingStream.name).where(EmbeddingStream.project_id == project_id)
    names = sorted(session.scalars(q).all())
    if stream:
        return [n for n in names if fnmatch.fnmatchcase(n, stream)]
    if agent:
        names = [n for n in names if n.startswith(f"{agent}.")]
    return [n for n in names if not n.endswith(FM6_SKIPPED_SUFFIXES)]


def load_embedding_window(
    session: Session,
    *,
    project_id: int,
    stream: str,
    start: datetime,
    end: datetime,
    max_vectors: int = DEFAULT_MAX_VECTORS,
) -> np.ndarray:
    """The stream's vectors created in ``[start, end)``, in arrival order; beyond
    ``max_vectors``, a uniform sample by a hash of the row id over the whole window."""
    in_window = (
        Embedding.project_id == project_id,
        Embedding.stream == stream,
        Embedding.created_at >= start,
        Embedding.created_at < end,
    )
    n = session.scalar(select(func.count()).select_from(Embedding).where(*in_window))
    if not n:
        return np.zeros((0, 0), dtype=np.float32)
    vectors = select(Embedding.vector, Embedding.dim).order_by(Embedding.id)
    if n <= max_vectors:  # the common case: one query for the whole window
        rows: list[Any] = list(session.execute(vectors.where(*in_window)).all())
    else:
        rate = max_vectors / n
        ids = [
            i
            for i in session.scalars(select(Embedding.id).where(*in_window))
            if sampling.unit_hash(f"embedding:{i}") < rate
        ]
        rows = []
        dialect = session.get_bind().dialect.name
        for chunk in window_rows.chunks(ids):
            # The window's bounds again: on PostgreSQL they limit the id lookups to the
            # window's days (partitions by created_at) instead of every day kept.
            rows += session.execute(
                vectors.where(*in_window, one_of(Embedding.id, chunk, dialect))
            ).all()
    dim = rows[0].dim
    buf = b"".join(r.vector for r in rows if r.dim == dim)
    return np.frombuffer(buf, dtype="<f4").reshape(-1, dim)
