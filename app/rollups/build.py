"""Rebuild one (project, bucket) of rollups from its raw rows.

Read (outside any write transaction: on SQLite the writer's lock would hold ingest up for
the read): the bucket's production traces, the spans of each (only the columns and the
few attribute keys the rollups count), and their scores; then, in one short write
transaction, the bucket's rows of every rollup table are replaced and its dirty mark
cleared if nothing marked it since it was read (:mod:`app.rollups.dirty`). A bucket holds
a few hundred to a few thousand traces, so a rebuild is a bounded read however old or
large the project is. What each row counts: :mod:`app.rollups.facts`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, Engine, delete, insert, select

from app.db import one_of, write_transaction
from app.ingest.score_values import stored_in_range
from app.models import (
    ModelRollup,
    Score,
    ScoreRollup,
    Span,
    ToolRollup,
    Trace,
    TraceRollup,
    UserRollup,
)
from app.rollups import dirty
from app.rollups.buckets import BUCKET_SECONDS, start_of
from app.rollups.facts import ENVIRONMENT_KEYS, BucketRows, bucket_rows
from app.scores import roles as score_roles

TABLES: tuple[Any, ...] = (TraceRollup, ToolRollup, ModelRollup, ScoreRollup, UserRollup)
_TRACE_COLUMNS = (Trace.trace_id, Trace.agent, Trace.agent_version, Trace.status,
                  Trace.started_at, Trace.ended_at, Trace.user_id, Trace.loop_tool)  # fmt: skip
_ATTRIBUTE_KEYS = ENVIRONMENT_KEYS
_SPAN_COLUMNS = (
    Span.trace_id, Span.span_id, Span.step_index, Span.started_at, Span.kind, Span.name,
    Span.tool_name, Span.status, Span.error_type, Span.latency_ms, Span.request_model,
    Span.response_model, Span.input_tokens, Span.output_tokens, Span.total_tokens, Span.cost,
)  # fmt: skip
_SPAN_KEYS = tuple(c.key for c in _SPAN_COLUMNS)
# A span of a trace started in the bucket starts within a day of it: the bound lets
# PostgreSQL read only those days' partitions of ``spans`` (NULL starts are in DEFAULT).
_SPAN_SLACK = timedelta(days=1)
_CHUNK = 1000


def chunks(ids: list[str]) -> list[list[str]]:
    return [ids[i : i + _CHUNK] for i in range(0, len(ids), _CHUNK)]


def read_bucket(conn: Connection, *, project_id: int, bucket: int) -> BucketRows:
    """The bucket's rollup rows, computed from its raw rows."""
    start, end = start_of(bucket), start_of(bucket + BUCKET_SECONDS)
    attrs = tuple(
        Trace.attributes[k].as_string().label(f"a{i}") for i, k in enumerate(_ATTRIBUTE_KEYS)
    )
    rows = conn.execute(
        select(*_TRACE_COLUMNS, *attrs).where(
            Trace.project_id == project_id, Trace.started_at >= start, Trace.started_at < end,
            Trace.source == "production",
        )
    ).all()  # fmt: skip
    n = len(_TRACE_COLUMNS)
    traces = []
    for r in rows:
        t = dict(zip((c.key for c in _TRACE_COLUMNS), r[:n], strict=True))
        t["attributes"] = {k: v for k, v in zip(_ATTRIBUTE_KEYS, r[n:], strict=True) if v}
        traces.append(t)
    ids = [t["trace_id"] for t in traces]
    roles = _roles(conn, project_id)
    spans: dict[str, list[dict[str, Any]]] = {}
    scores: dict[str, list[dict[str, Any]]] = {}
    dialect = conn.dialect.name
    for chunk in chunks(ids):
        for r in conn.execute(
            select(*_SPAN_COLUMNS, Span.attributes["error_type"].as_string(),
                   Span.attributes["correct"])
            .where(Span.project_id == project_id, one_of(Span.trace_id, chunk, dialect),
                   (Span.started_at >= start - _SPAN_SLACK) & (Span.started_at < end + _SPAN_SLACK)
                   | Span.started_at.is_(None))
        ):  # fmt: skip
            s = dict(zip(_SPAN_KEYS, r[: len(_SPAN_KEYS)], strict=True))
            error_type, correct = r[len(_SPAN_KEYS) :]
            s["step_attributes"] = {k: v for k, v in (("error_type", error_type),
                                                      ("correct", correct)) if v is not None}  # fmt: skip
            spans.setdefault(str(s["trace_id"]), []).append(s)
        for r in conn.execute(
            select(Score.trace_id, Score.name, Score.value, score_roles.is_label(roles))
            .where(Score.project_id == project_id, one_of(Score.trace_id, chunk, dialect),
                   stored_in_range(Score.value))
        ):  # fmt: skip
            scores.setdefault(r[0], []).append({"name": r[1], "value": r[2], "is_label": r[3]})
    return bucket_rows(project_id, bucket, traces, spans, scores)


def _roles(conn: Connection, project_id: int) -> score_roles.ScoreRoles:
    from sqlalchemy.orm import Session

    with Session(bind=conn) as session:
        return score_roles.get_roles(session, project_id=project_id)


def write_bucket(conn: Connection, *, project_id: int, bucket: int, rows: BucketRows) -> None:
    """Replace the bucket's rows in every rollup table."""
    for table in TABLES:
        conn.execute(delete(table).where(table.project_id == project_id, table.bucket == bucket))
    for table, found in zip(TABLES, (rows.traces, rows.tools, rows.models, rows.scores,
                                     rows.users), strict=True):  # fmt: skip
        if found:
            conn.execute(insert(table), found)


def rebuild(engine: Engine, mark: dirty.Mark) -> int:
    """Rebuild a marked bucket and clear its mark (unless marked again meanwhile); return
    the traces it counts."""
    with engine.connect() as conn:
        rows = read_bucket(conn, project_id=mark.project_id, bucket=mark.bucket)
    with write_transaction(engine) as conn:
        write_bucket(conn, project_id=mark.project_id, bucket=mark.bucket, rows=rows)
        dirty.clear(conn, [mark])
    return sum(r["traces"] for r in rows.traces)
