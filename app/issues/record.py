"""The derive job's write of failure events and issues, inside its own transaction.

For the traces of one derive write: their earlier events are deleted and taken off their
issues' counts, their failures (:mod:`app.issues.failures`) are mined into templates and
fingerprinted (:mod:`app.issues.grouping`), new issues are created, the events inserted
and the issues' counts, first/last seen and titles moved. All of it rides in the caller's
transaction with the traces' derived fields, so

- deriving a trace again never counts it twice (its old events go out as the new go in);
- a crash (kill -9) leaves either the whole batch or none of it: counts always equal what
  the stored events say, until retention deletes old events (the counts are summaries).

An event that lands on a resolved issue (by a person before it, or quiet for
:data:`app.issues.states.QUIET`) reopens it as *regressed*, recorded in its history.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, select, update
from sqlalchemy.engine import Connection

from app.issues.failures import Failure
from app.issues.grouping import book_for, fingerprint, save_book
from app.issues.states import comes_back
from app.models import FailureEvent, FailureIssue, IssueStateChange

Key = tuple[int, str]
ACTOR = "telltale"
_CHUNK = 500


@dataclass
class _Moves:
    """What this write changes on one issue."""

    events: int = 0
    traces: set[str] = field(default_factory=set)
    gone_events: int = 0
    gone_traces: int = 0
    first: datetime | None = None
    last: datetime | None = None


def record_failures(
    conn: Connection,
    *,
    traces: Sequence[Mapping[str, Any]],
    failures: Mapping[Key, Sequence[Failure]],
    now: datetime,
) -> int:
    """Replace the failure events of ``traces`` by ``failures``; returns events written."""
    by_project: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for t in traces:
        by_project[t["project_id"]].append(t)
    return sum(
        _record_project(conn, project_id, ts, failures, now)
        for project_id, ts in by_project.items()
    )


def _record_project(
    conn: Connection, project_id: int, traces: list[Mapping[str, Any]],
    failures: Mapping[Key, Sequence[Failure]], now: datetime,
) -> int:  # fmt: skip
    moves: dict[int, _Moves] = defaultdict(_Moves)
    _take_back(conn, project_id, [t["trace_id"] for t in traces], moves)
    found = [(t, f) for t in traces for f in failures.get((project_id, t["trace_id"]), ())]
    if not found and not moves:
        return 0
    book, revision = book_for(conn, project_id)
    rows: list[dict[str, Any]] = []
    parts: dict[str, dict[str, Any]] = {}
    titles: dict[str, str] = {}
    for t, f in found:
        template_id = book.add(f.message or f.error_type)
        agent = str(t.get("agent") or "")
        fp = fingerprint(agent=agent, span_kind=f.span_kind, tool=f.tool,
                         error_type=f.error_type, template_id=template_id)  # fmt: skip
        parts.setdefault(fp, {"agent": agent, "span_kind": f.span_kind, "tool": f.tool,
                              "error_type": f.error_type, "template_id": template_id})  # fmt: skip
        titles[fp] = book.template(template_id) or titles.get(fp, "")  # read while present
        rows.append({
            "project_id": project_id, "fp": fp, "trace_id": t["trace_id"], "span_id": f.span_id,
            "source": f.source, "at": f.at or t.get("started_at") or now, "agent": agent,
            "agent_version": str(t.get("agent_version") or "")[:64], "tool": f.tool,
            "span_kind": f.span_kind, "error_type": f.error_type, "message": f.message,
        })  # fmt: skip
    widened = save_book(conn, project_id, book, revision)
    if widened:  # every issue of a widened template reads its new title, not only these
        conn.execute(_RETITLE, [{"b_project": project_id, "b_template": i, "b_title": t}
                                for i, t, _ in widened])  # fmt: skip
    issues = _issues(conn, project_id, parts, titles, rows)
    for r in rows:
        r["issue_id"] = issues[r.pop("fp")]["id"]
        m = moves[r["issue_id"]]
        m.events += 1
        m.traces.add(r["trace_id"])
        m.first = r["at"] if m.first is None else min(m.first, r["at"])
        m.last = r["at"] if m.last is None else max(m.last, r["at"])
    if rows:
        conn.execute(insert(FailureEvent), rows)
    _move_issues(conn, project_id, moves, {i["id"]: i for i in issues.values()}, now)
    return len(rows)


def _take_back(conn: Connection, project_id: int, trace_ids: list[str],
               moves: dict[int, _Moves]) -> None:  # fmt: skip
    """Delete the traces' earlier events, noting what leaves each issue's counts."""
    for start in range(0, len(trace_ids), _CHUNK):
        chunk = trace_ids[start : start + _CHUNK]
        where = (FailureEvent.project_id == project_id, FailureEvent.trace_id.in_(chunk))
        gone = conn.execute(
            select(FailureEvent.issue_id, func.count(), func.count(FailureEvent.trace_id.distinct()))
            .where(*where).group_by(FailureEvent.issue_id)
        ).all()  # fmt: skip
        if not gone:
            continue
        for issue_id, events, traces in gone:
            moves[issue_id].gone_events += int(events)
            moves[issue_id].gone_traces += int(traces)
        conn.execute(delete(FailureEvent).where(*where))


def _issues(
    conn: Connection, project_id: int, parts: dict[str, dict[str, Any]],
    titles: dict[str, str], rows: list[dict[str, Any]],
) -> dict[str, dict[str, Any]]:  # fmt: skip
    """The issues of these fingerprints by fingerprint, created where missing."""
    if not parts:
        return {}
    cols = (FailureIssue.id, FailureIssue.fingerprint, FailureIssue.status,
            FailureIssue.status_at, FailureIssue.first_seen, FailureIssue.last_seen,
            FailureIssue.title, FailureIssue.regressed_at)  # fmt: skip
    found = {
        r["fingerprint"]: dict(r)
        for r in conn.execute(select(*cols).where(
            FailureIssue.project_id == project_id, FailureIssue.fingerprint.in_(list(parts))
        )).mappings()
    }  # fmt: skip
    for fp in sorted(set(parts) - set(found)):
        at = min(r["at"] for r in rows if r["fp"] == fp)
        new_id = conn.execute(
            insert(FailureIssue).values(
                project_id=project_id, fingerprint=fp, title=titles[fp], first_seen=at,
                last_seen=at, event_count=0, trace_count=0, status="open", **parts[fp],
            ).returning(FailureIssue.id)
        ).scalar_one()  # fmt: skip
        found[fp] = {"id": new_id, "fingerprint": fp, "status": "open", "status_at": None,
                     "first_seen": at, "last_seen": at, "title": titles[fp],
                     "regressed_at": None, "new": True}  # fmt: skip
    for fp, issue in found.items():
        issue["want_title"] = titles[fp]
    if any(issue.get("new") for issue in found.values()):
        _ensure_monitor(conn, project_id)
    return found


def _ensure_monitor(conn: Connection, project_id: int) -> None:
    """The project's first issue brings its ISSUES monitor, as the first evaluator with an
    objective brings JUDGE: in a savepoint of the derive transaction, so a replica that
    made it first (the monitor's name is unique per project) costs this write nothing."""
    from sqlalchemy.exc import IntegrityError
    from sqlalchemy.orm import Session

    from app.monitors.defaults import ensure_issues_monitor

    try:
        with Session(bind=conn, join_transaction_mode="create_savepoint") as session:
            ensure_issues_monitor(session, project_id=project_id)
            session.commit()
    except IntegrityError:
        pass


_RETITLE = (
    update(FailureIssue)
    .where(FailureIssue.project_id == bindparam("b_project"),
           FailureIssue.template_id == bindparam("b_template"))
    .values(title=bindparam("b_title"))
)  # fmt: skip
_MOVE = (
    update(FailureIssue)
    .where(FailureIssue.id == bindparam("b_id"))
    .values(
        event_count=FailureIssue.event_count + bindparam("b_events"),
        trace_count=FailureIssue.trace_count + bindparam("b_traces"),
        first_seen=bindparam("b_first", type_=FailureIssue.first_seen.type),
        last_seen=bindparam("b_last", type_=FailureIssue.last_seen.type),
        title=bindparam("b_title"),
        status=bindparam("b_status"),
        regressed_at=bindparam("b_regressed", type_=FailureIssue.regressed_at.type),
    )
)


def _move_issues(conn: Connection, project_id: int, moves: dict[int, _Moves],
                 issues: dict[int, dict[str, Any]], now: datetime) -> None:  # fmt: skip
    known = dict(issues)
    missing = [i for i in moves if i not in known]
    if missing:  # issues only losing events: read their current values
        cols = (FailureIssue.id, FailureIssue.status, FailureIssue.status_at,
                FailureIssue.first_seen, FailureIssue.last_seen, FailureIssue.title,
                FailureIssue.regressed_at)  # fmt: skip
        for r in conn.execute(select(*cols).where(FailureIssue.id.in_(missing))).mappings():
            known[r["id"]] = {**r, "want_title": r["title"]}
    updates, changes = [], []
    for issue_id, m in moves.items():
        issue = known[issue_id]
        status, regressed = issue["status"], issue.get("regressed_at")
        if (
            m.last is not None
            and not issue.get("new")
            and comes_back(
                status=status, status_at=issue["status_at"], last_seen=issue["last_seen"], at=m.last
            )
        ):
            changes.append({"project_id": project_id, "issue_id": issue_id, "at": now,
                            "actor": ACTOR, "from_state": "resolved", "to_state": "regressed",
                            "note": None})  # fmt: skip
            status, regressed = "open", m.last
        updates.append({
            "b_id": issue_id, "b_events": m.events - m.gone_events,
            "b_traces": len(m.traces) - m.gone_traces,
            "b_first": min(issue["first_seen"], m.first or issue["first_seen"]),
            "b_last": max(issue["last_seen"], m.last or issue["last_seen"]),
            "b_title": issue["want_title"], "b_status": status, "b_regressed": regressed,
        })  # fmt: skip
    if updates:
        conn.execute(_MOVE, updates)
    if changes:
        conn.execute(insert(IssueStateChange), changes)
