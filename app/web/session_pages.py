"""The sessions pages: a project's sessions by latest activity, and one session read as the
whole conversation across its turns. They read through :mod:`app.sessions.store`, as
``/api/v1/sessions`` does, with the page's read role."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query

from app.deps import SessionDep, found
from app.ingest.session_ids import MAX_ID_CHARS
from app.sessions import store
from app.sessions.schemas import Position
from app.web.deps import WebDep
from app.web.pages import parse_when
from app.web.session_view import session_turns

router = APIRouter(include_in_schema=False)
SESSIONS_PER_PAGE = 50
TURNS_PER_PAGE = 25


def _cursor(value: str | None) -> Position | None:
    if not value:
        return None
    try:
        return Position.decode(value)
    except ValueError as exc:
        raise HTTPException(422, f"cursor: {exc}") from None


@router.get("/sessions")
def sessions_page(
    web: WebDep,
    session: SessionDep,
    user: str | None = Query(None, max_length=MAX_ID_CHARS),
    since: str | None = Query(None, max_length=40),
    until: str | None = Query(None, max_length=40),
    cursor: str | None = Query(None, max_length=400),
) -> Any:
    """Latest activity first, keyset pages; ``user`` keeps the sessions with a turn of theirs."""
    page = store.list_sessions(
        session, project_id=web.principal.project_id, user_id=(user or "").strip() or None,
        since=parse_when(since, "since"), until=parse_when(until, "until"),
        limit=SESSIONS_PER_PAGE, cursor=_cursor(cursor),
    )  # fmt: skip
    filters = {"user": user or "", "since": since or "", "until": until or ""}
    return web.render("sessions.html", page=page, filters=filters)


@router.get("/sessions/{session_id:path}")
def session_page(
    session_id: str,
    web: WebDep,
    session: SessionDep,
    cursor: str | None = Query(None, max_length=400),
) -> Any:
    pid = web.principal.project_id
    position = _cursor(cursor)
    try:
        detail = store.get_session(
            session, project_id=pid, session_id=session_id, limit=TURNS_PER_PAGE, cursor=position
        )
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    detail = found(detail, "session", repr(session_id))
    first = 1
    if position is not None:
        first += store.turns_before(
            session, project_id=pid, session_id=session_id, at=position.at,
            trace_row_id=int(position.key) + 1,
        )  # fmt: skip
    turns = session_turns(session, project_id=pid, detail=detail, first_number=first)
    return web.render("session.html", s=detail, turns=turns)
