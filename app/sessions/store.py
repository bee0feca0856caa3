"""Session queries, scoped to one project: its sessions by latest activity, one session's turns.

A session is the traces of a project that share a ``session_id``; each is a *turn*, dated by
its start (its arrival when it has none). Both listings are keyset pages on (time, key), so
a page stays right while turns arrive. The list groups the project's traces that have a
session over the ``(project_id, session_id, started_at)`` index, then reads the figures of
only the page's sessions; the figures of a session are always of all its turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, case, func, or_, select
from sqlalchemy.orm import Session

from app.models import Score, Trace
from app.scores.roles import get_roles, kind_is
from app.sessions.schemas import (
    OutcomeOut,
    Position,
    SessionDetail,
    SessionOut,
    SessionPage,
    TurnOut,
)
from app.traces.schemas import ScoreOut, TraceOut

# A turn's time: its start, else its arrival (a native trace may carry no start).
TURN_TIME = func.coalesce(Trace.started_at, Trace.created_at)


def list_sessions(
    session: Session,
    *,
    project_id: int,
    user_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    cursor: Position | None = None,
) -> SessionPage:
    """The project's sessions, latest activity first; ``user_id`` keeps the sessions with a
    turn of that user, ``since <= last activity < until``."""
    last = func.coalesce(func.max(Trace.started_at), func.max(Trace.created_at))
    query = (
        select(Trace.session_id, last)
        .where(Trace.project_id == project_id, Trace.session_id.is_not(None))
        .group_by(Trace.session_id)
    )
    if user_id is not None:
        query = query.where(Trace.user_id == user_id)
    if since is not None:
        query = query.having(last >= since)
    if until is not None:
        query = query.having(last < until)
    if cursor is not None:
        query = query.having(
            or_(last < cursor.at, and_(last == cursor.at, Trace.session_id < cursor.key))
        )
    rows: list[Any] = list(
        session.execute(query.order_by(last.desc(), Trace.session_id.desc()).limit(limit + 1))
    )
    page = rows[:limit]
    found = summaries(session, project_id=project_id, session_ids=[r[0] for r in page])
    more = len(rows) > limit
    return SessionPage(
        sessions=[found[r[0]] for r in page],
        next_cursor=Position(page[-1][1], page[-1][0]).encode() if more else None,
    )


def summaries(
    session: Session, *, project_id: int, session_ids: Sequence[str]
) -> dict[str, SessionOut]:
    """Each named session's figures over all its turns; a session without turns is absent."""
    if not session_ids:
        return {}
    ids = list(session_ids)
    mine = and_(Trace.project_id == project_id, Trace.session_id.in_(ids))
    figures = session.execute(
        select(
            Trace.session_id,
            func.count(),
            func.coalesce(func.min(Trace.started_at), func.min(Trace.created_at)),
            func.coalesce(func.max(Trace.started_at), func.max(Trace.created_at)),
            func.sum(case((Trace.status == "error", 1), else_=0)),
        )
        .where(mine)
        .group_by(Trace.session_id)
    ).all()
    agents: dict[str, list[str]] = {}
    for row in session.execute(
        select(Trace.session_id, Trace.agent)
        .where(mine, Trace.agent != "")
        .group_by(Trace.session_id, Trace.agent)
        .order_by(Trace.session_id, Trace.agent)
    ):
        agents.setdefault(str(row[0]), []).append(row[1])
    users: dict[str, str] = dict(
        session.execute(
            _first_per_session(
                select(Trace.session_id, Trace.user_id).where(mine, Trace.user_id.is_not(None)),
                order_by=(TURN_TIME, Trace.id),
            )
        ).all()
    )
    outcomes = _latest_outcomes(session, project_id=project_id, session_ids=ids)
    return {
        sid: SessionOut(
            session_id=sid,
            user_id=users.get(sid),
            first_seen=first,
            last_seen=last,
            turns=int(turns),
            errors=int(errors or 0),
            agents=agents.get(sid, []),
            outcome=outcomes.get(sid),
        )
        for sid, turns, first, last, errors in figures
    }


def _first_per_session(query: Any, *, order_by: tuple[Any, ...]) -> Select[Any]:
    """``query``'s (session_id, value) rows, only the first per session by ``order_by``."""
    rank = func.row_number().over(partition_by=Trace.session_id, order_by=order_by)
    ranked = query.add_columns(rank.label("rank")).subquery()
    return select(ranked.c[0], ranked.c[1]).where(ranked.c.rank == 1)


def _latest_outcomes(
    session: Session, *, project_id: int, session_ids: list[str]
) -> dict[str, OutcomeOut]:
    """Each session's outcome: the score read as a ``true`` objective (the project's roles)
    of its latest turn that has one, the latest such score of that turn. A label that
    arrives late for an early turn does not hide how the session ended."""
    roles = get_roles(session, project_id=project_id)
    rank = func.row_number().over(
        partition_by=Trace.session_id,
        order_by=(TURN_TIME.desc(), Trace.id.desc(), Score.created_at.desc(), Score.id.desc()),
    )
    ranked = (
        select(Trace.session_id, Score.name, Score.value, Score.trace_id, Score.created_at,
               rank.label("rank"))
        .join(Score, and_(Score.project_id == Trace.project_id, Score.trace_id == Trace.trace_id))
        .where(Trace.project_id == project_id, Trace.session_id.in_(session_ids),
               kind_is(roles, "true"))
        .subquery()
    )  # fmt: skip
    rows = session.execute(select(ranked).where(ranked.c.rank == 1)).all()
    return {
        r.session_id: OutcomeOut(
            name=r.name, value=r.value, trace_id=r.trace_id, created_at=r.created_at
        )
        for r in rows
    }


def get_session(
    session: Session,
    *,
    project_id: int,
    session_id: str,
    limit: int = 100,
    cursor: Position | None = None,
) -> SessionDetail | None:
    """The session's figures and a page of its turns in time order, each with its scores;
    None when no trace of the project has it. Raises ValueError for a cursor no page of
    turns gave."""
    summary = summaries(session, project_id=project_id, session_ids=[session_id]).get(session_id)
    if summary is None:
        return None
    query = select(Trace, TURN_TIME).where(
        Trace.project_id == project_id, Trace.session_id == session_id
    )
    if cursor is not None:
        if not cursor.key.isdigit():
            raise ValueError("cursor: not a cursor of this session's turns")
        after = int(cursor.key)
        query = query.where(
            or_(TURN_TIME > cursor.at, and_(TURN_TIME == cursor.at, Trace.id > after))
        )
    rows = session.execute(query.order_by(TURN_TIME, Trace.id).limit(limit + 1)).all()
    page = rows[:limit]
    scores = turn_scores(session, project_id=project_id, trace_ids=[t.trace_id for t, _ in page])
    turns = [
        TurnOut.model_validate(
            {**TraceOut.model_validate(t).model_dump(), "scores": scores.get(t.trace_id, [])}
        )
        for t, _ in page
    ]
    last = page[-1] if len(rows) > limit else None
    return SessionDetail(
        **summary.model_dump(),
        traces=turns,
        next_cursor=Position(last[1], str(last[0].id)).encode() if last else None,
    )


def turn_scores(
    session: Session, *, project_id: int, trace_ids: list[str]
) -> dict[str, list[ScoreOut]]:
    """The scores of each of ``trace_ids``, in arrival order."""
    out: dict[str, list[ScoreOut]] = {}
    if not trace_ids:
        return out
    for sc in session.scalars(
        select(Score)
        .where(Score.project_id == project_id, Score.trace_id.in_(trace_ids))
        .order_by(Score.id)
    ):
        out.setdefault(sc.trace_id, []).append(ScoreOut.model_validate(sc))
    return out


def turns_before(
    session: Session, *, project_id: int, session_id: str, at: datetime, trace_row_id: int
) -> int:
    """How many of the session's turns come before the one at (``at``, ``trace_row_id``):
    a page of turns numbers its first one after them."""
    before = or_(TURN_TIME < at, and_(TURN_TIME == at, Trace.id < trace_row_id))
    count = session.scalar(
        select(func.count()).where(
            Trace.project_id == project_id, Trace.session_id == session_id, before
        )
    )
    return int(count or 0)


def turn_of(session: Session, *, project_id: int, trace_id: str) -> tuple[str, int, int] | None:
    """(session id, its turn number, its session's turns) of a trace; None out of a session."""
    row = session.execute(
        select(Trace.session_id, TURN_TIME, Trace.id).where(
            Trace.project_id == project_id, Trace.trace_id == trace_id
        )
    ).one_or_none()
    if row is None or row[0] is None:
        return None
    sid: str = row[0]
    at, row_id = row[1], row[2]
    before = turns_before(
        session, project_id=project_id, session_id=sid, at=at, trace_row_id=row_id
    )
    total = session.scalar(
        select(func.count()).where(Trace.project_id == project_id, Trace.session_id == sid)
    )
    return sid, before + 1, int(total or 0)
