"""Native ingestion: ``POST /api/v1/ingest`` (mixed events) and ``/api/v1/embeddings`` (bulk)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request

from app.api.body import parse_json, read_body
from app.api.deps import IngestKey, SettingsDep
from app.ingest.events import ValidEvent, validate_events
from app.ingest.fields import FieldError, decode_b64, opt_str, req_str
from app.ingest.service import ingest_batch
from app.metrics import INGEST_BYTES

router = APIRouter(prefix="/api/v1", tags=["ingest"])


@router.post("/ingest")
async def ingest(request: Request, principal: IngestKey, settings: SettingsDep) -> dict[str, Any]:
    """A batch ``{"events": [{"id", "type", "body"}]}``; 200 with per-event rejections."""
    raw = await read_body(request, limit=settings.max_request_bytes)
    INGEST_BYTES.labels(route="/api/v1/ingest").inc(len(raw))
    payload = parse_json(raw)
    if not isinstance(payload, dict) or not isinstance(payload.get("events"), list):
        raise HTTPException(422, "events: required, must be an array of events")
    events = payload["events"]
    if len(events) > settings.max_events_per_batch:
        raise HTTPException(
            413, f"events: {len(events)} events exceed the limit of {settings.max_events_per_batch}"
        )
    valid, rejected = validate_events(events)
    return await ingest_batch(
        app_state=request.app.state,
        project_id=principal.project_id,
        valid=valid,
        rejected=rejected,
        total=len(events),
    )


@router.post("/embeddings")
async def ingest_embeddings(
    request: Request, principal: IngestKey, settings: SettingsDep
) -> dict[str, Any]:
    """Bulk vectors for one stream: ``vectors_b64`` (one base64 block, row-major) or
    ``vectors`` (array of arrays); optional ``sample_ids`` and ``ids`` (client event ids;
    default ``<stream>:<sample_id>`` so re-sends are duplicates)."""
    raw = await read_body(request, limit=settings.max_request_bytes)
    INGEST_BYTES.labels(route="/api/v1/embeddings").inc(len(raw))
    payload = parse_json(raw)
    if not isinstance(payload, dict):
        raise HTTPException(422, "body: must be a JSON object")
    try:
        events = _bulk_to_events(payload, settings.max_events_per_batch)
    except FieldError as exc:
        raise HTTPException(422, str(exc)) from None
    valid = [
        ValidEvent(i, ev["id"], "embedding", ev["row"], vector=ev["vec"])
        for i, ev in enumerate(events)
    ]
    return await ingest_batch(
        app_state=request.app.state,
        project_id=principal.project_id,
        valid=valid,
        rejected=[],
        total=len(valid),
    )


def _bulk_to_events(payload: dict[str, Any], max_rows: int) -> list[dict[str, Any]]:
    import numpy as np

    stream = req_str(payload, "stream", "body")
    model = opt_str(payload, "model", "body") or ""
    if payload.get("vectors_b64") is not None:
        dim = payload.get("dim")
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
            raise FieldError("body.dim", "is required with vectors_b64 (a positive integer)")
        flat = decode_b64(
            payload["vectors_b64"],
            payload.get("dtype", "float32"),
            "body.vectors_b64",
            "body.dtype",
        )
        if flat.size % dim:
            raise FieldError(
                "body.vectors_b64", f"{flat.size} values are not a multiple of dim {dim}"
            )
        matrix = flat.reshape(-1, dim)
    elif payload.get("vectors") is not None:
        raw = payload["vectors"]
        if not isinstance(raw, list) or not raw or not all(isinstance(r, list) for r in raw):
            raise FieldError("body.vectors", "must be a non-empty array of arrays of numbers")
        if len({len(r) for r in raw}) != 1:
            raise FieldError("body.vectors", "all vectors must have the same dimension")
        try:
            matrix = np.asarray(raw, dtype=np.float64).astype(np.float32)
        except (TypeError, ValueError):
            raise FieldError("body.vectors", "must contain only numbers") from None
    else:
        raise FieldError("body.vectors", "is required (or vectors_b64 with dim and dtype)")
    n = matrix.shape[0]
    if n > max_rows:
        raise FieldError("body.vectors", f"{n} vectors exceed the limit of {max_rows}")
    bad = ~np.isfinite(matrix).all(axis=1)
    if bad.any():
        raise FieldError(f"body.vectors[{int(np.argmax(bad))}]", "contains NaN or infinite values")
    sample_ids = payload.get("sample_ids")
    if sample_ids is not None and (not isinstance(sample_ids, list) or len(sample_ids) != n):
        raise FieldError("body.sample_ids", f"must be an array of {n} strings")
    ids = payload.get("ids")
    if ids is not None and (not isinstance(ids, list) or len(ids) != n):
        raise FieldError("body.ids", f"must be an array of {n} event ids")
    if ids is None and sample_ids is None:
        raise FieldError("body.ids", "ids or sample_ids is required so re-sends are idempotent")
    trace_ids = payload.get("trace_ids")
    out = []
    for i in range(n):
        sid = None if sample_ids is None else str(sample_ids[i])
        eid = str(ids[i]) if ids is not None else f"{stream}:{sid}"
        out.append(
            {
                "id": eid,
                "vec": matrix[i],
                "row": {
                    "stream": stream,
                    "model": model,
                    "dim": int(matrix.shape[1]),
                    "vector": matrix[i].tobytes(),
                    "trace_id": None if not trace_ids else str(trace_ids[i]),
                    "sample_id": sid,
                },
            }
        )
    return out
