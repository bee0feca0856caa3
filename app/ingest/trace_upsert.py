"""Trace rows at ingest: a trace upserted from any of its pieces, and marked as grown.

The pieces of a trace (its trace event, its spans, its scores) may arrive in any order and
from several batches; :func:`upsert_traces` completes a stored trace instead of refusing
it, and :func:`touch_traces` marks a stored trace as grown, so that the derive job and the
monitors' step cache (:mod:`app.monitors.windows.step_cache`) read it again.
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from typing import Any

from sqlalchemy import bindparam, func, update
from sqlalchemy.engine import Connection

from app.db import dialect_insert, one_of_param
from app.models import Trace
from app.models.base import utcnow


def touch_traces(conn: Connection, *, project_id: int, trace_ids: Collection[str]) -> None:
    """Mark stored traces as just grown: ``updated_at`` now, ``derived_at`` and
    ``step_profile`` cleared.

    A trace not stored yet is skipped: it is created unsettled when it arrives. In trace-id
    order, so concurrent batches lock shared traces in one order (no deadlock).
    """
    ids = sorted(trace_ids)
    now = utcnow()
    stmt = _touch(conn.dialect.name)
    for start in range(0, len(ids), 500):
        conn.execute(stmt, {"pid": project_id, "ids": ids[start : start + 500], "now": now})


@functools.cache
def _touch(dialect: str) -> Any:
    """:func:`touch_traces`'s statement, built once per dialect. Built per batch (an ``IN``
    list compiled anew each time) it was a seventh of a small batch's server time."""
    return (
        update(Trace)
        .where(Trace.project_id == bindparam("pid"), one_of_param(Trace.trace_id, "ids", dialect))
        .values(updated_at=bindparam("now"), derived_at=None, step_profile=None)
    )


def upsert_traces(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """Insert traces; a trace already known (e.g. made from its spans) is completed.

    Given values win, missing ones keep what is stored, and attributes are merged, so
    the pieces of a trace may arrive in any order.
    """
    stmt = dialect_insert(conn.dialect.name, Trace)
    ex = stmt.excluded
    t = Trace.__table__.c
    merge_attrs = (
        t.attributes.op("||")(ex.attributes)
        if conn.dialect.name == "postgresql"
        else func.json_patch(t.attributes, ex.attributes)
    )
    keep = {
        name: func.coalesce(ex[name], t[name])
        for name in (
            "started_at",
            "ended_at",
            "input_hash",
            "entry_point",
            "counterfactual_of",
        )
    }
    stmt = stmt.on_conflict_do_update(
        index_elements=["project_id", "trace_id"],
        set_={
            **keep,
            "agent": func.coalesce(func.nullif(ex.agent, ""), t.agent),
            "agent_version": func.coalesce(func.nullif(ex.agent_version, ""), t.agent_version),
            "status": ex.status,
            "source": ex.source,
            "attributes": merge_attrs,
            "updated_at": ex.updated_at,
            "derived_at": None,
            "step_profile": None,
        },
    )
    # Two rows for one trace in one statement would hit ON CONFLICT twice: merge them first.
    merged: dict[str, dict[str, Any]] = {}
    for row in rows:
        prev = merged.get(row["trace_id"])
        if prev is None:
            merged[row["trace_id"]] = row
        else:
            attrs = {**prev["attributes"], **row["attributes"]}
            prev.update({k: v for k, v in row.items() if v not in (None, "")})
            prev["attributes"] = attrs
    conn.execute(stmt, list(merged.values()))
