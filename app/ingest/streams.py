"""Embedding streams of a project, as listed: dim, model, how many vectors and the newest."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

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
