"""The one write path for ingested data: idempotent, all-or-nothing per batch.

The API, the OTLP receiver and the embed worker all call :func:`write_events`. Inside one
transaction it claims the batch's client event ids (``INSERT .. ON CONFLICT DO NOTHING
RETURNING``; on PostgreSQL a COPY under a savepoint first, :func:`pg_copy.claim_ids`), and
writes rows only for ids it claimed, so a re-sent event writes nothing even when two
copies race: on PostgreSQL the second writer waits on the unique index and then sees the
conflict; on SQLite ``BEGIN IMMEDIATE`` serialises writers. Rows go in with
multi-row executemany or COPY, never one ORM add per row.

A span is one ``(trace_id, span_id)`` (with its start on PostgreSQL, whose span table is
partitioned by it): a span under any event id for a span already stored (or earlier in the
same batch) writes nothing and is counted in ``duplicates``, not ``accepted``, so the
answer says what was stored. That key is a span's whole identity, so spans claim no event
id: the span table's own unique index does what an ``ingest_events`` row would. Dropping
that second row and index entry per span (spans are most of what is ingested, and most of
what the retention job deleted row by row) measured 1.15x native and 1.09x OTLP spans/s
end to end on PostgreSQL (``bench/ingest.py``, ``bench/ingest_otlp.py``). Span rows go in
key order, so two batches that share spans wait on each other's index entries in one
order (no deadlock). Trace rows go after them, in trace-id order: each trace row the batch
writes or touches gains the spans it inserted in ``span_count`` (:mod:`.trace_size`).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.engine import Connection

from app.db import dialect_insert, write_transaction
from app.ingest import pg_copy
from app.ingest.events import Rejection, ValidEvent
from app.ingest.streams import check_stream_dims, stream_dims
from app.ingest.trace_size import (
    DEFAULT_MAX_SPANS_PER_TRACE,
    NO_SIZES,
    TraceSizes,
    refuse_oversized,
    stored_sizes,
)
from app.ingest.trace_upsert import touch_traces, upsert_traces
from app.ingest.vectors import VectorBatch
from app.models import (
    Embedding,
    IngestEvent,
    IngestMinute,
    Score,
    Span,
    SpanEvent,
)
from app.models.base import utcnow
from app.models.rollups import mark_scored

_TABLES = {"span": Span, "span_event": SpanEvent, "score": Score, "embedding": Embedding}


@dataclass
class WriteResult:
    accepted: int = 0
    duplicates: int = 0
    rejected: list[Rejection] = field(default_factory=list)
    accepted_by_type: dict[str, int] = field(default_factory=dict)


def _insert(conn: Connection, model: Any) -> Any:
    return dialect_insert(conn.dialect.name, model)


def write_events(
    engine: Engine,
    *,
    project_id: int,
    events: Sequence[ValidEvent],
    also: Callable[[Connection, Mapping[str, int]], None] | None = None,
    merged_traces: Collection[str] = (),
    max_spans_per_trace: int = DEFAULT_MAX_SPANS_PER_TRACE,
) -> WriteResult:
    """Write validated events for one project; return counts and late rejections
    (vectors of the wrong width, spans of a trace already at ``max_spans_per_trace``:
    :mod:`app.ingest.trace_size`).

    ``accepted`` counts events that wrote a row. ``duplicates`` counts those that wrote
    nothing: an event id seen before (in this batch or stored), or a span whose
    ``(trace_id, span_id)`` is already stored or earlier in the batch under another id.

    ``also(conn, span_counts)`` runs last inside the same transaction (the OTLP receiver
    merges its trace rows there), so it commits or rolls back with the events;
    ``merged_traces`` names the traces it merges, and ``span_counts`` is what it adds to
    their ``span_count`` (:meth:`TraceSizes.added`). Every other stored trace that gains a
    span or a span event here is touched (:func:`touch_traces`), so the derive job waits
    for it to settle, and its ``span_count`` grows by the spans inserted.
    """
    result = WriteResult()
    unique: list[ValidEvent] = []
    seen: set[str] = set()
    for ev in events:
        if ev.event_id in seen:
            result.duplicates += 1
        else:
            seen.add(ev.event_id)
            unique.append(ev)
    if not unique:
        return result
    with write_transaction(engine) as conn:
        unique = check_stream_dims(conn, project_id, unique, result.rejected)
        sizes = _sizes_before(conn, project_id, unique, merged_traces)
        unique = refuse_oversized(
            unique, result.rejected, stored=sizes.stored, max_spans=max_spans_per_trace
        )
        claiming = [ev for ev in unique if ev.type != "span"]
        claimed = _claim_event_ids(
            conn, project_id, [ev.event_id for ev in claiming], [ev.type for ev in claiming]
        )
        result.duplicates += len(claiming) - len(claimed)
        fresh = [ev for ev in unique if ev.type == "span" or ev.event_id in claimed]
        inserted = _write_rows(conn, project_id, fresh, sizes)
        skipped_spans = sum(1 for ev in fresh if ev.type == "span") - sum(inserted.values())
        result.duplicates += skipped_spans
        result.accepted = len(fresh) - skipped_spans
        for ev in fresh:
            result.accepted_by_type[ev.type] = result.accepted_by_type.get(ev.type, 0) + 1
        if skipped_spans:
            result.accepted_by_type["span"] -= skipped_spans
            if not result.accepted_by_type["span"]:
                del result.accepted_by_type["span"]
        if also is not None:
            also(conn, sizes.added(inserted))
        grown = {ev.row["trace_id"] for ev in fresh if ev.type in ("span", "span_event")}
        grown -= {ev.row["trace_id"] for ev in fresh if ev.type == "trace"}
        grown -= set(merged_traces)
        touch_traces(
            conn, project_id=project_id, spans_added={t: inserted.get(t, 0) for t in grown}
        )
        # A score counts in the rollup bucket of the trace it scores (app/rollups/dirty.py).
        scored = {ev.row["trace_id"] for ev in fresh if ev.type == "score"}
        mark_scored(conn, project_id=project_id, trace_ids=scored)
        # Last: every batch of a project in one minute updates this one row, so concurrent
        # batches queue on its lock from here to the commit; the later it is taken, the
        # less of each transaction is serialised.
        _count_minute(conn, project_id, result.accepted_by_type)
    return result


def write_vectors(engine: Engine, *, project_id: int, batch: VectorBatch) -> WriteResult:
    """Write one stream's bulk vectors, with :func:`write_events`'s guarantees.

    Idempotent per event id, all or nothing, durable at return. A batch whose dim is not
    its stream's is rejected whole, one rejection per vector, naming ``dim``.
    """
    result = WriteResult()
    first = _first_per_id(batch.event_ids)
    result.duplicates = len(batch) - len(first)
    with write_transaction(engine) as conn:
        dims = stream_dims(conn, project_id, {batch.stream: (batch.model, batch.dim)})
        if dims[batch.stream] != batch.dim:
            message = (
                f"body.dim: dimension {batch.dim} does not match stream {batch.stream!r} "
                f"(dim {dims[batch.stream]})"
            )
            result.duplicates = 0
            result.rejected = [Rejection(i, eid, message) for i, eid in enumerate(batch.event_ids)]
            return result
        ids = batch.event_ids if len(first) == len(batch) else [batch.event_ids[i] for i in first]
        claimed = _claim_event_ids(conn, project_id, ids, "embedding")
        fresh = (
            first
            if len(claimed) == len(first)
            else [i for i in first if batch.event_ids[i] in claimed]
        )
        result.duplicates += len(first) - len(fresh)
        result.accepted = len(fresh)
        if fresh:
            result.accepted_by_type["embedding"] = len(fresh)
            _write_vector_rows(conn, project_id, batch, fresh)
        _count_minute(conn, project_id, result.accepted_by_type)
    return result


def _first_per_id(event_ids: list[str]) -> list[int]:
    """The index of each id's first occurrence, in order."""
    if len(set(event_ids)) == len(event_ids):
        return list(range(len(event_ids)))
    seen: set[str] = set()
    first = []
    for i, eid in enumerate(event_ids):
        if eid not in seen:
            seen.add(eid)
            first.append(i)
    return first


def _write_vector_rows(
    conn: Connection, project_id: int, batch: VectorBatch, keep: list[int]
) -> None:
    now = utcnow()
    if conn.dialect.name == "postgresql":
        pg_copy.copy_vectors(conn, project_id, batch, keep, now)
        return
    rows = [
        {
            "project_id": project_id,
            "stream": batch.stream,
            "model": batch.model,
            "dim": batch.dim,
            "vector": batch.vector(i),
            "trace_id": batch.trace_ids[i],
            "sample_id": batch.sample_ids[i],
            "created_at": now,
        }
        for i in keep
    ]
    conn.execute(_insert(conn, Embedding), rows)


def _count_minute(conn: Connection, project_id: int, by_type: dict[str, int]) -> None:
    if not by_type:
        return
    minute = utcnow().replace(second=0, microsecond=0)
    rows = [
        {"project_id": project_id, "minute": minute, "type": t, "events": n}
        for t, n in sorted(by_type.items())
    ]
    conn.execute(_minute_upsert(conn.dialect.name), rows)


@functools.cache
def _minute_upsert(dialect: str) -> Any:
    """The minute counter's upsert, built once per dialect: building ``excluded`` and the
    statement anew was a tenth of a small batch's server time."""
    stmt = dialect_insert(dialect, IngestMinute)
    return stmt.on_conflict_do_update(
        index_elements=["project_id", "minute", "type"],
        set_={"events": IngestMinute.__table__.c.events + stmt.excluded.events},
    )


def _claim_event_ids(
    conn: Connection, project_id: int, ids: list[str], types: list[str] | str
) -> set[str]:
    """The ids not stored before, now stored; ``types`` is one per id or one for all."""
    if not ids:
        return set()
    now = utcnow()
    if conn.dialect.name == "postgresql":
        return pg_copy.claim_ids(conn, project_id, ids, types, now)
    per_id = [types] * len(ids) if isinstance(types, str) else types
    rows = [
        {"project_id": project_id, "event_id": eid, "type": t, "created_at": now}
        for eid, t in zip(ids, per_id, strict=True)
    ]
    stmt = _insert(conn, IngestEvent).on_conflict_do_nothing().returning(IngestEvent.event_id)
    return set(conn.execute(stmt, rows).scalars().all())


def _sizes_before(
    conn: Connection, project_id: int, events: list[ValidEvent], merged_traces: Collection[str]
) -> TraceSizes:
    """The stored spans of the traces this batch adds spans to or writes a row of."""
    trace_ids = {ev.row["trace_id"] for ev in events if ev.type in ("span", "trace")}
    if not trace_ids:  # scores, vectors and GenAI events change no span count
        return NO_SIZES
    return stored_sizes(conn, project_id, trace_ids | set(merged_traces))


def _write_rows(
    conn: Connection, project_id: int, events: list[ValidEvent], sizes: TraceSizes
) -> Counter[str]:
    """Write the rows; return the span rows inserted per trace (those already stored are
    skipped). Trace rows go after the spans, so their ``span_count`` adds what went in."""
    now = utcnow()
    by_type: dict[str, list[dict[str, Any]]] = {}
    spans: list[ValidEvent] = []
    for ev in events:
        if ev.type == "span":
            spans.append(ev)
            continue
        row = dict(ev.row, project_id=project_id)
        if ev.type in ("score", "embedding"):
            # A client's time, clamped to arrival: retention deletes by created_at, so a
            # row dated ahead (up to MAX_FUTURE of skew) must still go by arrival + retention,
            # with its event id, and never be stored twice.
            given = row.get("created_at")
            row["created_at"] = now if given is None or given > now else given
            if ev.type == "score":  # one key set per executemany batch
                row.setdefault("label", None)
                row.setdefault("explanation", None)
        elif ev.type == "trace":
            row["created_at"] = row["updated_at"] = now
        by_type.setdefault(ev.type, []).append(row)
    inserted: Counter[str] = Counter()
    if spans:
        inserted = _insert_spans(conn, project_id, _first_per_span_key(spans))
    if "trace" in by_type:
        upsert_traces(conn, by_type.pop("trace"), span_counts=sizes.added(inserted))
    for etype, rows in by_type.items():
        if conn.dialect.name == "postgresql" and etype in ("score", "embedding"):
            _copy_rows(conn, etype, rows)
        else:
            conn.execute(_insert(conn, _TABLES[etype]), rows)
    return inserted


def _first_per_span_key(spans: list[ValidEvent]) -> list[ValidEvent]:
    """The first span per key, in key order (the order batches lock index entries)."""
    keyed: dict[tuple[str, str], ValidEvent] = {}
    for ev in spans:
        keyed.setdefault((ev.row["trace_id"], ev.row["span_id"]), ev)
    return [keyed[k] for k in sorted(keyed)]


def _insert_spans(conn: Connection, project_id: int, spans: list[ValidEvent]) -> Counter[str]:
    """Insert span rows, skipping keys already stored; return how many went in per trace."""
    if conn.dialect.name == "postgresql" and pg_copy.copy_spans(conn, project_id, spans):
        return Counter(ev.row["trace_id"] for ev in spans)
    rows = [dict(ev.row, project_id=project_id) for ev in spans]
    stmt = _insert(conn, Span).on_conflict_do_nothing().returning(Span.trace_id)
    return Counter(conn.execute(stmt, rows).scalars())


def _copy_rows(conn: Connection, etype: str, rows: list[dict[str, Any]]) -> None:
    if etype == "score":
        pg_copy.copy_scores(conn, rows)
    else:
        pg_copy.copy_embeddings(conn, rows)
