"""Trace rows at ingest: a trace upserted from any of its pieces, and marked as grown.

The pieces of a trace (its trace event, its spans, its scores) may arrive in any order and
from several batches; :func:`upsert_traces` completes a stored trace instead of refusing
it, and :func:`touch_traces` marks a stored trace as grown, so that the derive job and the
monitors' step cache (:mod:`app.monitors.windows.step_cache`) read it again. Both add the
batch's spans to the row's ``span_count`` (:mod:`app.ingest.trace_size`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from sqlalchemy import ARRAY, Integer, any_, bindparam, func, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql.expression import Grouping

from app.db import dialect_insert
from app.models import Trace
from app.models.base import utcnow


def touch_traces(conn: Connection, *, project_id: int, spans_added: Mapping[str, int]) -> None:
    """Mark stored traces as just grown: ``updated_at`` now, ``derived_at`` and
    ``step_profile`` cleared, ``span_count`` raised by ``spans_added`` (trace id -> spans
    inserted, 0 for a trace that gained only GenAI events).

    A trace not stored yet is skipped: it is created unsettled when it arrives, counting
    the spans that came before it. In trace-id order, so concurrent batches lock shared
    traces in one order (no deadlock).
    """
    ids = sorted(spans_added)
    if not ids:
        return
    now = utcnow()
    stmt = _touch(conn.dialect.name)
    if conn.dialect.name == "postgresql":
        added = [spans_added[t] for t in ids]
        conn.execute(stmt, {"pid": project_id, "ids": ids, "added": added, "now": now})
    else:  # no arrays: one prepared statement a trace, in process
        rows = [{"pid": project_id, "tid": t, "added": spans_added[t], "now": now} for t in ids]
        conn.execute(stmt, rows)


@functools.cache
def _touch(dialect: str) -> Any:
    """:func:`touch_traces`'s statement, built once per dialect. Built per batch (an ``IN``
    list compiled anew each time) it was a seventh of a small batch's server time.

    On PostgreSQL one statement for the batch: the rows are found (and locked) by one
    ``= ANY`` index scan in id order, each row's increment looked up by its id's position."""
    if dialect == "postgresql":
        ids = bindparam("ids", type_=ARRAY(Trace.trace_id.type))
        where = Trace.trace_id == any_(ids)
        # (:added)[i]: an array parameter needs the parentheses to be subscripted
        added: Any = Grouping(bindparam("added", type_=ARRAY(Integer)))[
            func.array_position(ids, Trace.trace_id)
        ]
    else:
        where = Trace.trace_id == bindparam("tid")
        added = bindparam("added", type_=Integer)
    return (
        update(Trace)
        .where(Trace.project_id == bindparam("pid"), where)
        .values(
            updated_at=bindparam("now"),
            derived_at=None,
            step_profile=None,
            span_count=Trace.span_count + added,
        )
    )


def upsert_traces(
    conn: Connection, rows: list[dict[str, Any]], *, span_counts: Mapping[str, int]
) -> None:
    """Insert traces; a trace already known (e.g. made from its spans) is completed.

    Given values win, missing ones keep what is stored, and attributes are merged, so
    the pieces of a trace may arrive in any order. ``span_counts`` is what each trace's
    ``span_count`` gains (:meth:`app.ingest.trace_size.TraceSizes.added`). In trace-id
    order, as :func:`touch_traces`.
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
            "session_id",
            "user_id",
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
            "span_count": t.span_count + ex.span_count,
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
    for trace_id, row in merged.items():
        row["span_count"] = span_counts.get(trace_id, 0)
    conn.execute(stmt, [merged[trace_id] for trace_id in sorted(merged)])
