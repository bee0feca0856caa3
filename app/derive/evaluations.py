"""Queueing derived traces for the online evaluators, in the derive job's transaction.

Each trace the derive job derives is queued for every enabled evaluator of its project
whose selection takes it and whose sample holds it, however late it arrived (a long run,
a delayed export: its start time may lie hours back). ``(evaluator, version, trace)`` is
unique, so a trace derived again is not queued again. Here, beside the derive job, so that
it needs nothing of :mod:`app.evaluators` (which runs what is queued:
:mod:`app.evaluators.queue`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, select

from app.db import dialect_insert
from app.models.evaluators import Evaluation, Evaluator


def sampled(trace_id: str, rate: float) -> bool:
    """Whether ``trace_id`` falls in the sample: a hash, so every run and replica agrees.

    >>> sampled("abc", 1.0), sampled("abc", 1e-9)
    (True, False)
    """
    if rate >= 1.0:
        return True
    h = int.from_bytes(hashlib.sha256(trace_id.encode()).digest()[:8], "big")
    return h / 2**64 < rate


def environment(attrs: dict[str, object] | None) -> str | None:
    attrs = attrs or {}
    env = attrs.get("resource.deployment.environment.name") or attrs.get(
        "resource.deployment.environment"
    )
    return None if env is None else str(env)


def enqueue_derived(conn: Connection, traces: Sequence[Mapping[str, Any]], *, now: datetime) -> int:
    """Queue traces the derive job just derived, for every enabled evaluator of their
    projects that selects and samples them; how many evaluations were queued.

    Runs in the derive job's transaction, so a trace is queued when it is derived, however
    late it arrived (a long run, a delayed export: its start time may lie hours back). Due
    ``delay_seconds`` later; a claim takes it only if nothing arrived since (it is still
    derived, and was derived that long ago), else it waits.
    """
    projects = sorted({int(t["project_id"]) for t in traces})
    if not projects:
        return 0
    evaluators = conn.execute(
        select(Evaluator.id, Evaluator.project_id, Evaluator.version, Evaluator.selection,
               Evaluator.sample_rate, Evaluator.delay_seconds, Evaluator.watch_from)
        .where(Evaluator.project_id.in_(projects), Evaluator.enabled.is_(True))
    ).all()  # fmt: skip
    rows = []
    for ev in evaluators:
        sel = ev.selection or {}
        if sel.get("scope", "trace") != "trace":  # sessions are queued when idle (app.evaluators.sessions)
            continue
        for t in traces:
            started = t.get("started_at")
            if t["project_id"] != ev.project_id or started is None or started < ev.watch_from:
                continue
            if not _selected(sel, t) or not sampled(str(t["trace_id"]), ev.sample_rate):
                continue
            rows.append({"project_id": ev.project_id, "evaluator_id": ev.id,
                         "version": ev.version, "trace_id": t["trace_id"], "status": "pending",
                         "due_at": now + timedelta(seconds=ev.delay_seconds), "attempts": 0,
                         "backfill": False, "tokens": 0, "created_at": now})  # fmt: skip
    if rows:
        insert = dialect_insert(conn.dialect.name, Evaluation)
        conn.execute(
            insert.on_conflict_do_nothing(index_elements=["evaluator_id", "version", "trace_id"]),
            rows,
        )
    return len(rows)


def _selected(sel: Mapping[str, Any], t: Mapping[str, Any]) -> bool:
    if sel.get("agents") and t.get("agent") not in sel["agents"]:
        return False
    if sel.get("versions") and t.get("agent_version") not in sel["versions"]:
        return False
    if sel.get("sources") and t.get("source") not in sel["sources"]:
        return False
    return not sel.get("environments") or environment(t.get("attributes")) in sel["environments"]
