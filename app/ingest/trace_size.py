"""How many spans one trace may hold: spans past the bound are refused by name at ingest.

Nothing bounded a trace: one trace of 12,000 spans, sent in a second, held every
project's derivation for minutes (its span-tree walk was quadratic; it is linear now, but
the derive job, the monitors' window load and the trace page still read a trace whole).
A trace holds at most ``max_spans_per_trace`` spans (``TELLTALE_MAX_SPANS_PER_TRACE``,
default 10,000): a batch's spans beyond what their trace has room for are refused one by
one, naming the trace and the bound, and the rest of the batch is stored, as OTLP's
``partial_success`` and the native answer's ``rejected`` describe. The spans already stored
are counted in the write transaction; two batches of one trace written at the same moment
can each see the other's room, so a trace can pass the bound by at most one batch.
"""

from __future__ import annotations

from collections import Counter

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from app.ingest.events import Rejection, ValidEvent
from app.ingest.limits import IngestLimits
from app.models import Span

DEFAULT_MAX_SPANS_PER_TRACE = IngestLimits().max_spans_per_trace
_CHUNK = 500


def refuse_oversized(
    conn: Connection,
    project_id: int,
    events: list[ValidEvent],
    rejected: list[Rejection],
    *,
    max_spans: int,
) -> list[ValidEvent]:
    """``events`` less the spans their trace has no room for (appended to ``rejected``)."""
    new = Counter(ev.row["trace_id"] for ev in events if ev.type == "span")
    if not new:
        return events
    stored = stored_span_counts(conn, project_id, list(new))
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


def stored_span_counts(conn: Connection, project_id: int, trace_ids: list[str]) -> dict[str, int]:
    """Spans stored per trace of ``trace_ids`` (traces with none are left out)."""
    counts: dict[str, int] = {}
    for lo in range(0, len(trace_ids), _CHUNK):
        rows = conn.execute(
            select(Span.trace_id, func.count())
            .where(Span.project_id == project_id, Span.trace_id.in_(trace_ids[lo : lo + _CHUNK]))
            .group_by(Span.trace_id)
        )
        counts.update({tid: int(n) for tid, n in rows})
    return counts
