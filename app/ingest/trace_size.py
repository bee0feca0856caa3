"""How many spans one trace may hold: spans past the bound are refused by name at ingest.

Nothing bounded a trace: one trace of 12,000 spans, sent in a second, held every
project's derivation for minutes (its span-tree walk was quadratic; it is linear now, but
the derive job, the monitors' window load and the trace page still read a trace whole).
A trace holds at most ``max_spans_per_trace`` spans (``TELLTALE_MAX_SPANS_PER_TRACE``,
default 10,000): a batch's spans beyond what their trace has room for are refused one by
one, naming the trace and the bound, and the rest of the batch is stored, as OTLP's
``partial_success`` and the native answer's ``rejected`` describe.

The count is kept, not counted. A trace row carries ``span_count`` (migration 0023): the
write that inserts spans adds the number it inserted (a re-sent span inserts nothing, so
adds nothing) to the trace rows it upserts or touches anyway, in the same transaction
(:mod:`app.ingest.store`). Counting the stored spans per batch instead cost a read that
grew with the trace and, on PostgreSQL, probed every daily partition of ``spans``.

Spans may come before their trace row (the native API takes a trace's pieces in any
order, :mod:`app.retention.orphans`); until the row comes, their count is their spans
counted, and the row starts from it. So :func:`stored_sizes` reads, in one statement, the
trace rows' counts and counts spans only for the traces without a row, which for a new
trace finds none. Two batches of one trace written at the same moment can each see the
other's room, so a trace can pass the bound by at most one batch.

The count is exact but for two rare cases, where it is an upper bound (the bound then
refuses a little early, and a derive batch holds a little less): a partition drop of the
retention job (:mod:`app.retention.partitions`) takes a day of spans whose trace row is
kept (a trace row that arrived within its retention with spans dated before every
project's), and two batches that both create the row of a trace whose spans came before
it each add those spans.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import ARRAY, String, TextClause, bindparam, text
from sqlalchemy.engine import Connection

from app.ingest.events import Rejection, ValidEvent
from app.ingest.limits import IngestLimits

DEFAULT_MAX_SPANS_PER_TRACE = IngestLimits().max_spans_per_trace


@dataclass(frozen=True)
class TraceSizes:
    """Spans stored per trace before a batch (traces with none left out), and which of
    the traces read had no row then."""

    stored: Mapping[str, int]
    rowless: Collection[str]

    def added(self, inserted: Mapping[str, int]) -> dict[str, int]:
        """What a batch that ``inserted`` these spans per trace adds to each trace row's
        ``span_count``: a row it creates starts from the spans stored before it came."""
        added = dict(inserted)
        for trace_id in self.rowless:
            if trace_id in self.stored:
                added[trace_id] = added.get(trace_id, 0) + self.stored[trace_id]
        return added


NO_SIZES = TraceSizes({}, ())


def stored_sizes(conn: Connection, project_id: int, trace_ids: Collection[str]) -> TraceSizes:
    """The stored spans of ``trace_ids``: a row's ``span_count``, else its spans counted."""
    if not trace_ids:
        return NO_SIZES
    dialect = conn.dialect.name
    ids: Any = list(trace_ids)
    if dialect != "postgresql":
        ids = orjson.dumps(ids).decode()  # json_each reads text
    stored: dict[str, int] = {}
    rowless: set[str] = set()
    for trace_id, kept, counted in conn.execute(_sizes(dialect), {"pid": project_id, "ids": ids}):
        if kept is None:
            rowless.add(trace_id)
        n = counted if kept is None else kept
        if n:
            stored[trace_id] = int(n)
    return TraceSizes(stored, rowless)


@functools.cache
def _sizes(dialect: str) -> TextClause:
    """:func:`stored_sizes`'s statement: per trace id, its row's count, else its spans'.

    Each id is looked up alone, by equality on the leading keys ``(project_id, trace_id)``
    of the traces' and the spans' unique indexes, so no plan can be worse than an index
    probe per id (and per daily partition of ``spans``), whatever the statistics say. Set
    forms were planned as scans of the whole project while statistics were stale: the
    grouped ``trace_id = ANY(..)`` span count this replaces took 93-390 ms a batch on a
    day partition of 50,000-150,000 fresh spans (1-3 ms once analyzed), and a join of the
    ids to ``traces`` hashed all 15,000 of the project's trace rows (9 ms)."""
    ids = (
        "unnest(:ids) AS u(trace_id)"
        if dialect == "postgresql"
        else "(SELECT value AS trace_id FROM json_each(:ids)) AS u"
    )
    stmt = text(
        "WITH k AS MATERIALIZED (SELECT u.trace_id, (SELECT t.span_count FROM traces t"
        " WHERE t.project_id = :pid AND t.trace_id = u.trace_id) AS kept"
        f" FROM {ids})"
        " SELECT trace_id, kept, CASE WHEN kept IS NULL THEN (SELECT count(*) FROM spans s"
        " WHERE s.project_id = :pid AND s.trace_id = k.trace_id) END FROM k"
    )
    if dialect == "postgresql":
        stmt = stmt.bindparams(bindparam("ids", type_=ARRAY(String)))
    return stmt


def refuse_oversized(
    events: list[ValidEvent],
    rejected: list[Rejection],
    *,
    stored: Mapping[str, int],
    max_spans: int,
) -> list[ValidEvent]:
    """``events`` less the spans their trace has no room for (appended to ``rejected``),
    given the spans ``stored`` per trace before them."""
    new = Counter(ev.row["trace_id"] for ev in events if ev.type == "span")
    if not new:
        return events
    room = {tid: max_spans - stored.get(tid, 0) for tid in new}
    if all(room[tid] >= n for tid, n in new.items()):
        return events
    kept: list[ValidEvent] = []
    for ev in events:
        if ev.type == "span":
            tid = ev.row["trace_id"]
            if room[tid] <= 0:
                rejected.append(
                    Rejection(
                        ev.index,
                        ev.event_id,
                        f"events[{ev.index}]: trace {tid!r} holds {max_spans} spans already, "
                        f"the most a trace may hold (TELLTALE_MAX_SPANS_PER_TRACE)",
                    )
                )
                continue
            room[tid] -= 1
        kept.append(ev)
    return kept
