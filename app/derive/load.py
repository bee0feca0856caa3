"""Read one batch of settled traces with their spans, GenAI events, project rules and prices.

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
from app.pricing.overrides import ProjectPrices, load_prices

_TRACE_COLUMNS = (
    Trace.id, Trace.project_id, Trace.trace_id, Trace.agent, Trace.agent_version,
    Trace.started_at, Trace.status, Trace.input_hash, Trace.source, Trace.counterfactual_of,
    Trace.attributes, Trace.updated_at, Trace.span_count,
)  # fmt: skip
_SPAN_COLUMNS = (
    Span.trace_id, Span.span_id, Span.parent_span_id, Span.kind, Span.name, Span.tool_name,
    Span.status, Span.error_type, Span.started_at, Span.step_index, Span.confidence,
    Span.attributes, Span.request_model, Span.response_model, Span.input_tokens,
    Span.output_tokens, Span.cost, Span.cost_source,
)  # fmt: skip
_CHUNK = 500
# Spans a derive batch reads at most (about a second of derivation here): a
# batch's time, and so how long another project's trace can wait behind it, is bounded.
DEFAULT_BATCH_SPANS = 10_000


@dataclass
class Batch:
    traces: list[dict[str, Any]] = field(default_factory=list)
    spans: dict[tuple[int, str], list[dict[str, Any]]] = field(default_factory=dict)
    # (project_id, trace_id) -> {span_id: [event, ...]} in time order
    events: dict[tuple[int, str], dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    configs: dict[int, DerivedFieldRules] = field(default_factory=dict)
    # each project's model prices over the shipped table (app/pricing)
    prices: dict[int, ProjectPrices] = field(default_factory=dict)


Keyset = tuple[datetime, int]


def pending_batch(
    conn: Connection,
    *,
    cutoff: datetime,
    limit: int,
    span_budget: int = DEFAULT_BATCH_SPANS,
    after: Mapping[int, Keyset] | None = None,
) -> Batch:
    """Up to ``limit`` settled traces holding about ``span_budget`` spans, a fair share of
    both per project, each project's oldest arrival first, past its keyset in ``after``.

    Every project with traces waiting gets ``1 / projects`` of the traces and of the spans
    (at least one trace; the batch is topped up from projects with more waiting): a flood
    of one project's traces used to fill every batch, oldest first, so another project's
    fresh trace waited behind it, and a batch of 2,000-span traces took seconds to derive.
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
    n = max(1, len(waiting))
    share, span_share = max(1, -(-limit // n)), max(1, span_budget // n)
    rows: list[Any] = []
    spans_used = 0
    more: list[tuple[int, Keyset]] = []  # projects that may have more than their share
    for project_id in waiting:
        got = _oldest(conn, project_id, cutoff=cutoff, after=after.get(project_id), limit=share)
        kept, spans = _within_spans(got, span_share)
        rows.extend(kept)
        spans_used += spans
        if len(kept) == share:
            more.append((project_id, (kept[-1]["updated_at"], kept[-1]["id"])))
    for project_id, last in more:  # room left by projects with less waiting than a share
        room, span_room = limit - len(rows), span_budget - spans_used
        if room <= 0 or span_room <= 0:
            break
        got = _oldest(conn, project_id, cutoff=cutoff, after=last, limit=room)
        kept, spans = _within_spans(got, span_room, at_least_one=False)
        rows.extend(kept)
        spans_used += spans
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
        batch.prices = load_prices(conn, list(by_project))
    return batch


def _within_spans(
    rows: list[Any], budget: int, *, at_least_one: bool = True
) -> tuple[list[Any], int]:
    """The first of ``rows`` whose spans add up to at most ``budget`` (the first always,
    unless ``at_least_one`` is off), and their spans (the rows' ``span_count``, which
    ingest keeps: :mod:`app.ingest.trace_size`)."""
    kept: list[Any] = []
    used = 0
    for r in rows:
        spans = r["span_count"]
        if used + spans > budget and (kept or not at_least_one):
            break
        kept.append(r)
        used += spans
    return kept, used


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
