"""Reading sessions back: a project's sessions by latest activity, and one session's turns."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, Field

from app.api.deps import ReadKey, SessionDep
from app.api.errors import found, unprocessable
from app.ingest.session_ids import MAX_ID_CHARS
from app.models.base import UTCTime
from app.sessions import store
from app.sessions.schemas import Cursor, Position, SessionDetail, SessionPage

router = APIRouter(prefix="/api/v1/sessions", tags=["sessions"])
SessionId = Annotated[str, Path(max_length=MAX_ID_CHARS)]


class SessionFilters(BaseModel):
    """The session list's query parameters, each narrowing the list when given."""

    user_id: str | None = Field(None, max_length=MAX_ID_CHARS, description="a turn of this user")
    since: UTCTime | None = Field(None, description="latest activity >= since (ISO-8601)")
    until: UTCTime | None = Field(None, description="latest activity < until (ISO-8601)")
    limit: int = Field(50, ge=1, le=500)
    cursor: Cursor | None = None


class TurnPage(BaseModel):
    limit: int = Field(100, ge=1, le=500, description="turns per page")
    cursor: Cursor | None = None


def _position(cursor: str | None) -> Position | None:
    return Position.decode(cursor) if cursor is not None else None


@router.get("")
def list_sessions(
    principal: ReadKey, session: SessionDep, filters: Annotated[SessionFilters, Query()]
) -> SessionPage:
    """Latest activity first: each session's first and last turn, turns (its traces), user,
    agents, failed turns and latest outcome score. Pass ``next_cursor`` back as ``cursor``."""
    return store.list_sessions(
        session, project_id=principal.project_id, user_id=filters.user_id, since=filters.since,
        until=filters.until, limit=filters.limit, cursor=_position(filters.cursor),
    )  # fmt: skip


@router.get("/{session_id:path}")
def get_session(
    session_id: SessionId,
    principal: ReadKey,
    session: SessionDep,
    page: Annotated[TurnPage, Query()],
) -> SessionDetail:
    """The session's figures and its turns (traces) in time order, each with its scores."""
    with unprocessable(ValueError):
        got = store.get_session(
            session, project_id=principal.project_id, session_id=session_id, limit=page.limit,
            cursor=_position(page.cursor),
        )  # fmt: skip
    return found(got, "session", repr(session_id))
