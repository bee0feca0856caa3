"""Load a monitor's data windows from the database into the detectors' shapes.

Trace windows become ``detectors.records.TraceRecord`` lists following the contract in
``detectors/records.py``: epoch-float times, spans as steps in step order, every score of
the trace (labels are ``true`` scores from ``delayed``/``human`` sources; the detector
hides the ones created after ``now``), and input/output embeddings from the streams
``<agent>.input`` / ``<agent>.output`` joined on ``trace_id``. Embedding windows for FM-6
are float32 matrices per stream.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Select, or_, select
from sqlalchemy.orm import Session

from app.models import Embedding, EmbeddingStream, Score, Span, Trace
from detectors import records

DEFAULT_MAX_TRACES = 20_000
DEFAULT_MAX_VECTORS = 50_000


@dataclass(frozen=True)
class TraceSelection:
    project_id: int
    agent: str | None = None
    source: str | None = None
    max_traces: int = DEFAULT_MAX_TRACES


def _chunks(ids: list[str], size: int = 1000) -> list[list[str]]:
    return [ids[i : i + size] for i in range(0, len(ids), size)]


_TRACE_COLUMNS = (
    Trace.trace_id, Trace.agent, Trace.agent_version, Trace.started_at, Trace.ended_at,
    Trace.status, Trace.input_hash, Trace.entry_point, Trace.source, Trace.counterfactual_of,
    Trace.attributes,
)  # fmt: skip
_SPAN_COLUMNS = (
    Span.trace_id, Span.span_id, Span.parent_span_id, Span.step_index, Span.kind, Span.name,
    Span.status, Span.tool_name, Span.error_type, Span.started_at, Span.ended_at, Span.confidence,
    Span.attributes,
)  # fmt: skip


def _trace_query(
    sel: TraceSelection, start: datetime, end: datetime, as_of: datetime | None
) -> Select[Any]:
    """The newest ``max_traces`` traces of the window."""
    q = select(*_TRACE_COLUMNS).where(
        Trace.project_id == sel.project_id, Trace.started_at >= start, Trace.started_at < end
    )
    if as_of is not None:
        q = q.where(or_(Trace.ended_at.is_(None), Trace.ended_at <= as_of))
    if sel.agent:
        q = q.where(Trace.agent == sel.agent)
    if sel.source:
        q = q.where(Trace.source == sel.source)
    return q.order_by(Trace.started_at.desc()).limit(sel.max_traces)


def load_trace_records(
    session: Session,
    sel: TraceSelection,
    *,
    start: datetime,
    end: datetime,
    as_of: datetime | None = None,
    with_embeddings: bool = True,
) -> list[records.TraceRecord]:
    """The traces that started in ``[start, end)``, oldest first (:func:`records.from_rows`).

    With ``as_of`` (the run's ``now``) a replayed run sees what a live one would have:
    traces that had ended by then and scores created by then.
    """
    pid = sel.project_id
    traces: list[Any] = list(session.execute(_trace_query(sel, start, end, as_of)).mappings())
    if not traces:
        return []
    # Children are fetched by explicit id lists in chunks: a plain index lookup per chunk,
    # whatever the planner thinks of a LIMITed subquery on a freshly loaded table.
    trace_ids = [t["trace_id"] for t in traces]
    spans: list[Any] = []
    scores: list[Any] = []
    vectors: list[dict[str, Any]] = []
    streams = [f"{a}.{side}" for a in {t["agent"] for t in traces} for side in ("input", "output")]
    for chunk in _chunks(trace_ids):
        spans += session.execute(
            select(*_SPAN_COLUMNS).where(Span.project_id == pid, Span.trace_id.in_(chunk))
        ).mappings()
        score_q = (
            select(
                Score.trace_id, Score.name, Score.value, Score.kind, Score.source, Score.created_at
            )
            .where(Score.project_id == pid, Score.trace_id.in_(chunk))
            .order_by(Score.id)
        )
        if as_of is not None:
            score_q = score_q.where(Score.created_at <= as_of)
        scores += session.execute(score_q).mappings()
        if not with_embeddings:
            continue
        for row in session.execute(
            select(Embedding.trace_id, Embedding.stream, Embedding.vector)
            .where(
                Embedding.project_id == pid,
                Embedding.trace_id.in_(chunk),
                Embedding.stream.in_(streams),
            )
            .order_by(Embedding.id)
        ):
            vector = np.frombuffer(row.vector, dtype="<f4")
            vectors.append({"trace_id": row.trace_id, "stream": row.stream, "vector": vector})
    return records.from_rows(traces, spans, scores, vectors)


TRACE_STREAM_SUFFIXES = (".input", ".output")


def embedding_streams(
    session: Session, *, project_id: int, stream: str | None, agent: str | None
) -> list[str]:
    """The streams an FM-6 run tests.

    ``stream`` may be a name or a glob (``vlm.*``). Without one: every stream of the
    project (of ``agent``, when given) except the per-trace ``<agent>.input`` /
    ``<agent>.output`` streams, which FM-3 and FM-5 read with their traces.
    """
    q = select(EmbeddingStream.name).where(EmbeddingStream.project_id == project_id)
    names = sorted(session.scalars(q).all())
    if stream:
        return [n for n in names if fnmatch.fnmatchcase(n, stream)]
    if agent:
        names = [n for n in names if n.startswith(f"{agent}.")]
    return [n for n in names if not n.endswith(TRACE_STREAM_SUFFIXES)]


def load_embedding_window(
    session: Session,
    *,
    project_id: int,
    stream: str,
    start: datetime,
    end: datetime,
    max_vectors: int = DEFAULT_MAX_VECTORS,
) -> np.ndarray:
    """The newest ``max_vectors`` vectors of the stream created in ``[start, end)``."""
    rows = session.execute(
        select(Embedding.vector, Embedding.dim)
        .where(
            Embedding.project_id == project_id,
            Embedding.stream == stream,
            Embedding.created_at >= start,
            Embedding.created_at < end,
        )
        .order_by(Embedding.created_at.desc())
        .limit(max_vectors)
    ).all()
    if not rows:
        return np.zeros((0, 0), dtype=np.float32)
    dim = rows[0].dim
    buf = b"".join(r.vector for r in rows if r.dim == dim)
    return np.frombuffer(buf, dtype="<f4").reshape(-1, dim)
