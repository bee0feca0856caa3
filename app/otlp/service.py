"""Export one OTLP request: decode, map, then write through the ingest store.

Decoding and mapping run in the thread pool before admission (a malformed body gets its
400 without taking a write slot); the write takes a slot of the shared admission control,
so OTLP and native ingestion share one bound on concurrent and waiting batches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException
from sqlalchemy.engine import Connection
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from app.ingest.limits import IngestLimits
from app.ingest.service import write_admitted
from app.metrics import INGEST_BYTES, record_ingest
from app.otlp.decode import MalformedBody, decode_protobuf
from app.otlp.decode_json import decode_json
from app.otlp.mapping import MappedBatch, map_spans
from app.otlp.responses import export_response
from app.otlp.traces import merge_traces

PROTOBUF = "protobuf"
JSON = "json"


@dataclass(frozen=True)
class ExportCall:
    """One OTLP/HTTP export as a signal's exporter takes it: the body (read within the size
    limit), its encoding, the caller's project, and the item and attribute limits."""

    app_state: Any
    project_id: int
    body: bytes
    wire: str
    max_items: int
    limits: IngestLimits


def decode_and_map(
    body: bytes, *, wire: str, max_spans: int, limits: IngestLimits = IngestLimits()
) -> MappedBatch:
    """Raise 400 for a body that is not an ExportTraceServiceRequest, 413 for too many spans."""
    if not body and wire != PROTOBUF:
        # Zero bytes are the protobuf encoding of an empty request (the Collector answers
        # 200), but they are not a JSON document.
        raise HTTPException(400, "request body is empty; expected an ExportTraceServiceRequest")
    decode = decode_protobuf if wire == PROTOBUF else decode_json
    try:
        spans = decode(body, max_depth=limits.max_attribute_depth)
    except MalformedBody as exc:
        raise HTTPException(400, str(exc)) from None
    if len(spans) > max_spans:
        raise HTTPException(413, f"{len(spans)} spans exceed the limit of {max_spans} per request")
    return map_spans(spans, max_attributes_bytes=limits.max_attributes_bytes)


async def export_traces(call: ExportCall) -> Response:
    """Store the request's spans and merge their traces; 200, with ``partial_success`` naming
    the spans refused (an ``ExportTraceServiceResponse``)."""
    INGEST_BYTES.labels(route="/v1/traces").inc(len(call.body))
    mapped = await run_in_threadpool(
        decode_and_map, call.body, wire=call.wire, max_spans=call.max_items, limits=call.limits
    )

    def merge(conn: Connection, span_counts: Mapping[str, int]) -> None:
        merge_traces(conn, project_id=call.project_id, rows=mapped.traces, span_counts=span_counts)

    by_index = {ev.index: ev.row["trace_id"] for ev in mapped.events if ev.type == "span"}
    written = await write_admitted(
        call.app_state,
        project_id=call.project_id,
        # Event-id order is lock order: concurrent exports sharing spans cannot deadlock.
        events=sorted(mapped.events, key=lambda ev: ev.event_id),
        also=merge,
        merged_traces={t["trace_id"] for t in mapped.traces},
    )
    # Spans refused at the write: their trace is full (app.ingest.trace_size).
    late = Counter(by_index[r.index] for r in written.rejected if r.index in by_index)
    rejected = mapped.rejected + sum(late.values())
    spans = sum(1 for ev in mapped.events if ev.type == "span") - sum(late.values())
    record_ingest("span", "ok", spans)
    if rejected:
        record_ingest("span", "rejected", rejected)
    bound = call.app_state.settings.max_spans_per_trace
    full = [f"trace {tid} holds {bound} spans, the most a trace may hold "
            f"(TELLTALE_MAX_SPANS_PER_TRACE): {n} span(s) refused" for tid, n in late.items()]  # fmt: skip
    message = "; ".join([*mapped.messages, *full])
    if rejected:
        message = f"{rejected} span(s) rejected: {message}"
    return export_response(wire=call.wire, rejected_spans=rejected, error_message=message)
