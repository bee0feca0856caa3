"""Embedding streams of the project, with dim, model and counts."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import ReadKey, SessionDep
from app.ingest import streams
from app.ingest.streams import StreamList

router = APIRouter(prefix="/api/v1/streams", tags=["streams"])


@router.get("")
def list_streams(principal: ReadKey, session: SessionDep) -> StreamList:
    return StreamList(streams=streams.list_streams(session, project_id=principal.project_id))
