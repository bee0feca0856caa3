"""Session-level evaluators: a multi-turn conversation judged as a whole once it is idle.

An evaluator with ``selection.scope = "session"`` reads every trace of a session (those
carrying its ``session_id``: :mod:`app.ingest.session_ids`) as one conversation, in start
order, once no turn has started for ``session_idle_seconds``. Its evaluation, and the
score, belong to the session's last turn: a session that goes on later has a new last
turn and is judged again, whole; one that does not is judged once (the queue's unique key).
Sessions are sampled by a hash of their id; the selection's agents, versions, sources and
environments are read on the last turn.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db import dialect_insert
from app.derive.evaluations import environment, sampled
from app.evaluators.content import TraceContent, load_contents
from app.models import Trace
from app.models.evaluators import Evaluation, Evaluator

# Sessions whose last turn started longer ago than this are not looked for again.
LOOKBACK = timedelta(days=2)
SCAN_LIMIT = 5_000


def enqueue_idle_sessions(session: Session, ev: Evaluator, *, now: datetime) -> int:
    """Queue the last turn of each idle session of ``ev``'s project not judged yet."""
    sel = ev.selection or {}
    idle_since = now - timedelta(seconds=int(sel.get("session_idle_seconds", 1800)))
    lo = max(ev.watch_from, now - LOOKBACK)
    last = (
        select(Trace.session_id, func.max(Trace.started_at).label("last"))
        .where(Trace.project_id == ev.project_id, Trace.session_id.is_not(None),
               Trace.started_at >= lo, Trace.started_at <= now)
        .group_by(Trace.session_id)
        .having(func.max(Trace.started_at) <= idle_since)
        .subquery()
    )  # fmt: skip
    judged = select(Evaluation.trace_id).where(
        Evaluation.evaluator_id == ev.id, Evaluation.version == ev.version
    )
    rows = session.execute(
        select(Trace.trace_id, Trace.session_id, Trace.agent, Trace.agent_version, Trace.source,
               Trace.attributes)
        .join(last, (last.c.session_id == Trace.session_id) & (last.c.last == Trace.started_at))
        .where(Trace.project_id == ev.project_id, Trace.derived_at.is_not(None),
               Trace.trace_id.not_in(judged))
        .limit(SCAN_LIMIT)
    ).all()  # fmt: skip
    due = []
    for tid, sid, agent, version, source, attrs in rows:
        if sel.get("agents") and agent not in sel["agents"]:
            continue
        if sel.get("versions") and version not in sel["versions"]:
            continue
        if sel.get("sources") and source not in sel["sources"]:
            continue
        if sel.get("environments") and environment(attrs) not in sel["environments"]:
            continue
        if sampled(str(sid), ev.sample_rate):
            due.append(tid)
    if due:
        insert = dialect_insert(session.get_bind().dialect.name, Evaluation)
        session.execute(
            insert.on_conflict_do_nothing(index_elements=["evaluator_id", "version", "trace_id"]),
            [{"project_id": ev.project_id, "evaluator_id": ev.id, "version": ev.version,
              "trace_id": tid, "status": "pending", "due_at": now, "attempts": 0,
              "backfill": False, "tokens": 0, "created_at": now} for tid in due],
        )  # fmt: skip
    return len(due)


def load_session_contents(
    session: Session, *, project_id: int, last_turns: list[str]
) -> dict[str, TraceContent]:
    """Each last turn's whole session as one content: every turn's chat and tool calls in
    start order, under the last turn's trace id (its agent, version and metadata)."""
    if not last_turns:
        return {}
    sessions = dict(
        session.execute(
            select(Trace.trace_id, Trace.session_id).where(
                Trace.project_id == project_id, Trace.trace_id.in_(last_turns)
            )
        ).all()
    )
    turns = session.execute(
        select(Trace.session_id, Trace.trace_id)
        .where(Trace.project_id == project_id,
               Trace.session_id.in_([s for s in sessions.values() if s is not None]))
        .order_by(Trace.started_at, Trace.id)
    ).all()  # fmt: skip
    by_session: dict[str, list[str]] = {}
    for sid, tid in turns:
        if sid is not None:
            by_session.setdefault(sid, []).append(tid)
    contents = load_contents(session, project_id=project_id,
                             trace_ids=[t for ts in by_session.values() for t in ts])  # fmt: skip
    out: dict[str, TraceContent] = {}
    for last in last_turns:
        mine = contents.get(last)
        sid = sessions.get(last)
        if mine is None:
            continue
        parts = [contents[t] for t in by_session.get(sid or "", [last]) if t in contents]
        out[last] = TraceContent(
            mine.trace_id, mine.agent, mine.agent_version, mine.source, mine.environment,
            mine.attributes, chat=[m for c in parts for m in c.chat],
            tool_calls=[call for c in parts for call in c.tool_calls],
        )  # fmt: skip
    return out
