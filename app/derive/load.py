"""Read one batch of settled traces with their spans, GenAI events and project rules.

*Settled*: ``derived_at IS NULL`` (never derived, or something arrived since) and
``updated_at`` at least the settle time ago. The queue is those two columns of ``traces``
and the partial index ``ix_traces_derive_pending`` on ``(project_id, updated_at) WHERE
derived_at IS NULL`` (each project's queue in order, for its share), not a cursor: a cursor over arrival time cannot see a span that lands later in an
already-derived trace, while clearing ``derived_at`` on every arrival
(:func:`app.ingest.trace_upsert.touch_traces`, the trace merges) re-queues exactly that trace, and
the index holds only the traces waiting, so finding them costs the same at any table size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.engine import Connection

from app.derive.config import DerivedFieldRules, effective_config
from app.models import Project, Span, SpanEvent, Trace

_TRACE_COLUMNS = (
    Trace.id, Trace.project_id, Trace.trace_id, Trace.agent, Trace.agent_version,
    Trace.started_at, Trace.status, Trace.input_hash, Trace.source, Trace.counterfactual_of,
    Trace.attributes, Trace.updated_at,
)  # fmt: skip
_SPAN_COLUMNS = (
    Span.trace_id, Span.span_id, Span.parent_span_id, Span.kind, Span.name, Span.tool_name,
    Span.status, Span.error_type, Span.started_at, Span.step_index, Span.confidence,
    Span.attributes,
)  # fmt: skip
_CHUNK = 500


@dataclass
class Batch:
    traces: list[dict[str, Any]] = field(default_factory=list)
    spans: dict[tuple[int, str], list[dict[str, Any]]] = field(default_factory=dict)
    # (project_id, trace_id) -> {span_id: [event, ...]} in time order
    events: dict[tuple[int, str], dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    configs: dict[int, DerivedFieldRules] = field(default_factory=dict)


Keyset = tuple[datetime, int]


def pending_batch(
    conn: Connection,
    *,
    cutoff: datetime,
    limit: int,
    after: Mapping[int, Keyset] | None = None,
) -> Batch:
    """Up to ``limit`` settled traces, a fair share per project, each project's oldest
    arrival first, past that project's keyset in ``after``.

    Every project with traces waiting gets ``limit / projects`` of the batch (the batch is
    topped up from the projects with more waiting): a flood of one project's traces used
    to fill every batch, oldest first, and another project's fresh trace waited behind it.
    """
    after = after or {}
    waiting = list(
        conn.scalars(
            select(Trace.project_id)
            .where(Trace.derived_at.is_(None), Trace.updated_at <= cutoff)
            .distinct()
            .order_by(Trace.project_id)
        )
    )
    rows: list[Any] = []
    share = max(1, -(-limit // max(1, len(waiting))))
    full: list[int] = []
    for project_id in waiting:
        got = _oldest(conn, project_id, cutoff=cutoff, after=after.get(project_id), limit=share)
        rows.extend(got)
        if len(got) == share:
            full.append(project_id)
    for project_id in full:  # room left by projects with fewer waiting than their share
        if len(rows) >= limit:
            break
        mine = [r for r in rows if r["project_id"] == project_id]
        last = (mine[-1]["updated_at"], mine[-1]["id"])
        rows.extend(_oldest(conn, project_id, cutoff=cutoff, after=last, limit=limit - len(rows)))
    batch = Batch(traces=[dict(r) for r in rows[:limit]])
    by_project: dict[int, list[str]] = defaultdict(list)
    for t in batch.traces:
        by_project[t["project_id"]].append(t["trace_id"])
        batch.spans[(t["project_id"], t["trace_id"])] = []
        batch.events[(t["project_id"], t["trace_id"])] = {}
    for project_id, trace_ids in by_project.items():
        _load_content(conn, batch, project_id, trace_ids)
    if by_project:
        stored = conn.execute(
            select(Project.id, Project.derived_field_rules).where(Project.id.in_(list(by_project)))
        ).all()
        batch.configs = {pid: effective_config(cfg) for pid, cfg in stored}
    return batch


def _oldest(
    conn: Connection, project_id: int, *, cutoff: datetime, after: Keyset | None, limit: int
) -> list[Any]:
    """A project's oldest settled traces past ``after`` (``ix_traces_derive_pending``)."""
    query = select(*_TRACE_COLUMNS).where(
        Trace.project_id == project_id, Trace.derived_at.is_(None), Trace.updated_at <= cutoff
    )
    if after is not None:
        at, row_id = after
        query = query.where(
            or_(Trace.updated_at > at, and_(Trace.updated_at == at, Trace.id > row_id))
        )
    return list(conn.execute(query.order_by(Trace.updated_at, Trace.id).limit(limit)).mappings())


def _load_content(conn: Connection, batch: Batch, project_id: int, trace_ids: list[str]) -> None:
    for start in range(0, len(trace_ids), _CHUNK):
        chunk = trace_ids[start : start + _CHUNK]
        spans = conn.execute(
            select(*_SPAN_COLUMNS).where(Span.project_id == project_id, Span.trace_id.in_(chunk))
        ).mappings()
        for s in spans:
            batch.spans[(project_id, s["trace_id"])].append(dict(s))
        events = conn.execute(
            select(
                SpanEvent.trace_id,
                SpanEvent.span_id,
                SpanEvent.name,
                SpanEvent.attributes,
                SpanEvent.body,
            )  # fmt: skip
            .where(SpanEvent.project_id == project_id, SpanEvent.trace_id.in_(chunk))
            .order_by(SpanEvent.time, SpanEvent.id)
        )
        for trace_id, span_id, name, attributes, body in events:
            by_span = batch.events[(project_id, trace_id)]
            by_span.setdefault(span_id, []).append(
                {"name": name, "attributes": attributes or {}, "body": body}
            )
