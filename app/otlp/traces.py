"""Merge what one OTLP request says about its traces into the stored trace rows.

Spans of one trace may arrive in several requests, in any order, and re-sent. Every
merge here is commutative and idempotent, so the order does not matter:

- ``started_at`` / ``ended_at`` widen (earliest start, latest end seen);
- ``status`` becomes ``error`` once the root or an agent span has failed, and stays;
- the agent is the best claim seen (``otel.agent_key``: an agent span's own name before a
  workflow's before the root's ``service.name`` before any span's; the earliest start
  within one), whichever request brought it;
- ``telltale.*`` trace fields, the session and the user from the root override, from other
  spans only fill gaps;
- ``source`` takes a value other than the default ``production`` when one is given;
- ``updated_at`` is the last arrival and ``derived_at`` is cleared (:mod:`app.derive.job`);
- ``span_count`` adds the spans the request inserted (:mod:`app.ingest.trace_size`).

Rows are written in trace-id order so two concurrent requests lock shared traces in the
same order on PostgreSQL (no deadlock); SQLite serialises writers anyway.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from sqlalchemy import and_, case, func, or_, true
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from app.models import Trace
from app.models.base import utcnow

_FILL_FIELDS = ("input_hash", "entry_point", "counterfactual_of", "session_id", "user_id")
AGENT_KEY = "otel.agent_key"


def merge_traces(
    conn: Connection,
    *,
    project_id: int,
    rows: list[dict[str, Any]],
    span_counts: Mapping[str, int],
) -> None:
    """Merge ``rows`` (one per trace) into the stored trace rows; ``span_counts`` is what
    each trace's ``span_count`` gains (:meth:`app.ingest.trace_size.TraceSizes.added`)."""
    now = utcnow()
    from_root: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    for row in sorted(rows, key=lambda r: r["trace_id"]):
        db_row = {k: v for k, v in row.items() if k != "rank"}
        db_row.update(
            project_id=project_id,
            created_at=now,
            updated_at=now,
            source=row["source"] or "production",
            span_count=span_counts.get(row["trace_id"], 0),
        )
        (from_root if row["rank"] == 2 else others).append(db_row)
    for batch, root in ((from_root, True), (others, False)):
        if batch:
            conn.execute(_merge_statement(conn.dialect.name, root=root), batch)


@functools.cache
def _merge_statement(dialect: str, *, root: bool) -> Any:
    pg = dialect == "postgresql"
    stmt = (postgresql if pg else sqlite).insert(Trace)
    ex, t = stmt.excluded, Trace.__table__.c
    # PostgreSQL LEAST/GREATEST skip NULLs; SQLite's scalar min/max return NULL on any
    # NULL, hence the COALESCE pairs. SQLite stores these as fixed-width ISO text, which
    # sorts like the times themselves.
    least, greatest = (func.least, func.greatest) if pg else (func.min, func.max)

    def widen(fn: Any, col: str) -> Any:
        return fn(func.coalesce(t[col], ex[col]), func.coalesce(ex[col], t[col]))

    def merge_json(base: Any, patch: Any) -> Any:
        return base.op("||")(patch) if pg else func.json_patch(base, patch)

    # The agent with the better ``otel.agent_key`` wins (app.otlp.mapping.agent_identity),
    # whichever request brought it; the key kept is the smaller of the two.
    if pg:
        stored_key = func.nullif(t.attributes.op("->>")(AGENT_KEY), "")
        given_key = func.nullif(ex.attributes.op("->>")(AGENT_KEY), "")
    else:
        stored_key = func.nullif(func.json_extract(t.attributes, f'$."{AGENT_KEY}"'), "")
        given_key = func.nullif(func.json_extract(ex.attributes, f'$."{AGENT_KEY}"'), "")
    unclaimed = true() if root else t.agent == ""
    given_wins = and_(
        given_key.is_not(None),
        or_(and_(stored_key.is_(None), unclaimed), given_key < stored_key),
    )
    agent = {
        "agent": case((given_wins, ex.agent), else_=t.agent),
        "agent_version": case((given_wins, ex.agent_version), else_=t.agent_version),
    }
    if root:
        fields = {name: func.coalesce(ex[name], t[name]) for name in _FILL_FIELDS}
        attributes = merge_json(t.attributes, ex.attributes)
    else:
        fields = {name: func.coalesce(t[name], ex[name]) for name in _FILL_FIELDS}
        attributes = merge_json(ex.attributes, t.attributes)
    best_key = func.coalesce(least(stored_key, given_key), stored_key, given_key, "")
    if pg:
        attributes = attributes.op("||")(func.jsonb_build_object(AGENT_KEY, best_key))
    else:
        attributes = func.json_set(attributes, f'$."{AGENT_KEY}"', best_key)
    return stmt.on_conflict_do_update(
        index_elements=["project_id", "trace_id"],
        set_={
            "started_at": widen(least, "started_at"),
            "ended_at": widen(greatest, "ended_at"),
            "status": case((ex.status == "error", "error"), else_=t.status),
            "source": case((ex.source != "production", ex.source), else_=t.source),
            **agent,
            **fields,
            "attributes": attributes,
            # Something arrived: the trace is not settled, its signals are derived again.
            "updated_at": ex.updated_at,
            "derived_at": None,
            "step_profile": None,
            "span_count": t.span_count + ex.span_count,
        },
    )
