"""Export one OTLP request: decode, map, then write through the ingest store.

Decoding and mapping run in the thread pool before admission (a malformed body gets its
400 without taking a write slot); the write takes a slot of the shared admission control,
so OTLP and native ingestion share one bound on concurrent and waiting batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException
from sqlalchemy.engine import Connection
from starlette.concurrency import run_in_threadpool

from app.ingest.admission import WriteAdmission
from app.ingest.limits import IngestLimits
from app.ingest.store import WriteResult, write_events
from app.metrics import INGEST_BYTES, record_ingest
from app.otlp.decode import MalformedBody, decode_protobuf
from app.otlp.decode_json import decode_json
from app.otlp.mapping import MappedBatch, map_spans
from app.otlp.traces import merge_traces

PROTOBUF = "protobuf"
JSON = "json"


@dataclass(frozen=True)
class ExportResult:
    accepted: int
    duplicates: int
    rejected_spans: int
    error_message: str


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


async def export_traces(
    *,
    app_state: Any,
    project_id: int,
    body: bytes,
    wire: str,
    max_spans: int,
    limits: IngestLimits,
) -> ExportResult:
    INGEST_BYTES.labels(route="/v1/traces").inc(len(body))
    mapped = await run_in_threadpool(
        decode_and_map, body, wire=wire, max_spans=max_spans, limits=limits
    )
    result = WriteResult()
    if mapped.events:
        # Event-id order is lock order: concurrent exports sharing spans cannot deadlock.
        events = sorted(mapped.events, key=lambda ev: ev.event_id)

        def merge(conn: Connection) -> None:
            merge_traces(conn, project_id=project_id, rows=mapped.traces)

        admission: WriteAdmission = app_state.admission
        async with admission.slot():
            result = await run_in_threadpool(
                write_events,
                app_state.engine,
                project_id=project_id,
                events=events,
                also=merge,
                merged_traces={t["trace_id"] for t in mapped.traces},
            )
    spans = sum(1 for ev in mapped.events if ev.type == "span")
    record_ingest("span", "ok", spans)
    if mapped.rejected:
        record_ingest("span", "rejected", mapped.rejected)
    message = "; ".join(mapped.messages)
    if mapped.rejected:
        message = f"{mapped.rejected} span(s) rejected: {message}"
    return ExportResult(result.accepted, result.duplicates, mapped.rejected, message)
