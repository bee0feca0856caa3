"""Embedding streams of a project: listed (dim, model, how many vectors and the newest), and
their dims, fixed by a stream's first vector, held against every vector written to it."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from app.db import dialect_insert
from app.ingest.events import Rejection, ValidEvent
from app.models import Embedding, EmbeddingStream
from app.response_model import ResponseModel, Time


class StreamOut(ResponseModel):
    name: str
    model: str
    dim: int
    count: int
    last_at: Time | None
    created_at: Time


class StreamList(ResponseModel):
    streams: list[StreamOut]


def list_streams(session: Session, *, project_id: int) -> list[StreamOut]:
    """Every stream by name, with its vector count and newest vector's time."""
    stats = {
        name: (int(n), last)
        for name, n, last in session.execute(
            select(Embedding.stream, func.count(), func.max(Embedding.created_at))
            .where(Embedding.project_id == project_id)
            .group_by(Embedding.stream)
        )
    }
    streams = session.scalars(
        select(EmbeddingStream)
        .where(EmbeddingStream.project_id == project_id)
        .order_by(EmbeddingStream.name)
    )
    return [
        StreamOut(
            name=s.name,
            model=s.model,
            dim=s.dim,
            count=stats.get(s.name, (0, None))[0],
            last_at=stats.get(s.name, (0, None))[1],
            created_at=s.created_at,
        )
        for s in streams
    ]


def check_stream_dims(
    conn: Connection, project_id: int, events: list[ValidEvent], rejected: list[Rejection]
) -> list[ValidEvent]:
    """Fix a new stream's dim from its first vector; reject vectors of another dim (added
    to ``rejected``)."""
    first: dict[str, ValidEvent] = {}
    for ev in events:
        if ev.type == "embedding":
            first.setdefault(ev.row["stream"], ev)
    if not first:
        return events
    dims = stream_dims(
        conn, project_id, {name: (ev.row["model"], ev.row["dim"]) for name, ev in first.items()}
    )
    kept: list[ValidEvent] = []
    for ev in events:
        if ev.type == "embedding" and ev.row["dim"] != dims[ev.row["stream"]]:
            rejected.append(
                Rejection(
                    ev.index,
                    ev.event_id,
                    f"events[{ev.index}].body.vector: dimension {ev.row['dim']} does not match "
                    f"stream {ev.row['stream']!r} (dim {dims[ev.row['stream']]})",
                )
            )
        else:
            kept.append(ev)
    return kept


def stream_dims(
    conn: Connection, project_id: int, first: dict[str, tuple[str, int]]
) -> dict[str, int]:
    """Each named stream's dim, creating a new stream with the (model, dim) given for it."""
    rows = [
        {"project_id": project_id, "name": name, "model": model, "dim": dim}
        for name, (model, dim) in first.items()
    ]
    conn.execute(dialect_insert(conn.dialect.name, EmbeddingStream).on_conflict_do_nothing(), rows)
    return dict(
        conn.execute(  # type: ignore[arg-type]
            select(EmbeddingStream.name, EmbeddingStream.dim).where(
                EmbeddingStream.project_id == project_id, EmbeddingStream.name.in_(list(first))
            )
        ).all()
    )
