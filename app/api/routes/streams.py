"""Embedding streams of the project, with dim, model and counts."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from sqlalchemy import func, select

from app.api.deps import ReadKey, SessionDep
from app.models import Embedding, EmbeddingStream

router = APIRouter(prefix="/api/v1/streams", tags=["streams"])


@router.get("")
def list_streams(principal: ReadKey, session: SessionDep) -> dict[str, Any]:
    pid = principal.project_id
    counts: dict[str, int] = dict(
        session.execute(
            select(Embedding.stream, func.count())
            .where(Embedding.project_id == pid)
            .group_by(Embedding.stream)
        ).all()
    )
    last: dict[str, object] = dict(
        session.execute(
            select(Embedding.stream, func.max(Embedding.created_at))
            .where(Embedding.project_id == pid)
            .group_by(Embedding.stream)
        ).all()
    )
    streams = session.scalars(
        select(EmbeddingStream)
        .where(EmbeddingStream.project_id == pid)
        .order_by(EmbeddingStream.name)
    ).all()
    return {
        "streams": [
            {
                "name": s.name,
                "model": s.model,
                "dim": s.dim,
                "count": counts.get(s.name, 0),
                "last_at": last.get(s.name),
                "created_at": s.created_at,
            }
            for s in streams
        ]
    }
