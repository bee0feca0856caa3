"""Native ingestion: ``POST /api/v1/ingest`` (mixed events) and ``/api/v1/embeddings`` (bulk)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request

from app.api.body import parse_json, read_body
from app.api.deps import IngestKey, SettingsDep
from app.ingest.events import ValidEvent, validate_events
from app.ingest.fields import FieldError, as_str, decode_b64, opt_str, req_str
from app.ingest.limits import IngestLimits
from app.ingest.schemas import EmbeddingsBatch, IngestAnswer, IngestBatch, json_body
from app.ingest.service import ingest_batch
from app.metrics import INGEST_BYTES

router = APIRouter(prefix="/api/v1", tags=["ingest"])


# The body is read raw (gzip, size limits) and checked per event by app.ingest.events:
# faster than pydantic, and a bad event is rejected alone. The models only document it.
@router.post("/ingest", openapi_extra=json_body(IngestBatch))
async def ingest(request: Request, principal: IngestKey, settings: SettingsDep) -> IngestAnswer:
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
    valid, rejected = validate_events(events, limits=IngestLimits.from_settings(settings))
    return await ingest_batch(
        app_state=request.app.state,
        project_id=principal.project_id,
        valid=valid,
        rejected=rejected,
        total=len(events),
    )


@router.post("/embeddings", openapi_extra=json_body(EmbeddingsBatch))
async def ingest_embeddings(
    request: Request, principal: IngestKey, settings: SettingsDep
) -> IngestAnswer:
    """Bulk vectors for one stream: ``vectors_b64`` (one base64 block, row-major) or
    ``vectors`` (array of arrays); optional ``sample_ids`` and ``ids`` (client event ids;
    default ``<stream>:<sample_id>`` so re-sends are duplicates)."""
    raw = await read_body(request, limit=settings.max_request_bytes)
    INGEST_BYTES.labels(route="/api/v1/embeddings").inc(len(raw))
    payload = parse_json(raw)
    if not isinstance(payload, dict):
        raise HTTPException(422, "body: must be a JSON object")
    try:
        events = _bulk_to_events(
            payload, max_rows=settings.max_events_per_batch, max_dim=settings.max_embedding_dim
        )
    except FieldError as exc:
        raise HTTPException(422, str(exc)) from None
    valid = [ValidEvent(i, ev["id"], "embedding", ev["row"]) for i, ev in enumerate(events)]
    return await ingest_batch(
        app_state=request.app.state,
        project_id=principal.project_id,
        valid=valid,
        rejected=[],
        total=len(valid),
    )


def _bulk_to_events(
    payload: dict[str, Any], *, max_rows: int, max_dim: int
) -> list[dict[str, Any]]:
    import numpy as np

    stream = req_str(payload, "stream", "body")
    model = opt_str(payload, "model", "body") or ""
    if payload.get("vectors_b64") is not None:
        dim = payload.get("dim")
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
            raise FieldError("body.dim", "is required with vectors_b64 (a positive integer)")
        if dim > max_dim:
            raise FieldError("body.dim", f"dimension {dim} exceeds the maximum {max_dim}")
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
            with np.errstate(over="ignore"):  # past float32's range is inf: refused below
                matrix = np.asarray(raw, dtype=np.float64).astype(np.float32)
        except (TypeError, ValueError):
            raise FieldError("body.vectors", "must contain only numbers") from None
        if matrix.ndim != 2:
            raise FieldError("body.vectors", "must be an array of arrays of numbers")
        if matrix.shape[1] > max_dim:
            raise FieldError(
                "body.vectors", f"dimension {matrix.shape[1]} exceeds the maximum {max_dim}"
            )
    else:
        raise FieldError("body.vectors", "is required (or vectors_b64 with dim and dtype)")
    n = matrix.shape[0]
    if n > max_rows:
        raise FieldError("body.vectors", f"{n} vectors exceed the limit of {max_rows}")
    bad = ~np.isfinite(matrix).all(axis=1)
    if bad.any():
        raise FieldError(f"body.vectors[{int(np.argmax(bad))}]", "contains NaN or infinite values")
    sample_ids = _per_vector(payload, "sample_ids", n, max_len=128)
    ids = _per_vector(payload, "ids", n, max_len=200)
    if ids is None and sample_ids is None:
        raise FieldError("body.ids", "ids or sample_ids is required so re-sends are idempotent")
    trace_ids = _per_vector(payload, "trace_ids", n, max_len=64, nullable=True)
    # One bytes object for the whole matrix, cut per row: a numpy row view and its
    # tobytes() per vector were a tenth of the batch's server time.
    dim = int(matrix.shape[1])
    blob, width = np.ascontiguousarray(matrix, dtype="<f4").tobytes(), dim * 4
    sids: list[str | None] = sample_ids if sample_ids is not None else [None] * n
    tids: list[str | None] = trace_ids if trace_ids is not None else [None] * n
    eids = (
        ids
        if ids is not None
        else [as_str(f"{stream}:{sid}", "body.sample_ids", 200) for sid in sids]
    )
    return [
        {
            "id": eids[i],
            "row": {
                "stream": stream,
                "model": model,
                "dim": dim,
                "vector": blob[i * width : (i + 1) * width],
                "trace_id": tids[i],
                "sample_id": sids[i],
            },
        }
        for i in range(n)
    ]


def _per_vector(
    payload: dict[str, Any], key: str, n: int, *, max_len: int, nullable: bool = False
) -> list[str | None] | None:
    """``payload[key]``: one string (or integer) per vector, or absent."""
    values = payload.get(key)
    if values is None:
        return None
    if not isinstance(values, list) or len(values) != n:
        raise FieldError(f"body.{key}", f"must be an array of {n} strings, one per vector")
    return [
        None if v is None and nullable else as_str(v, f"body.{key}[{i}]", max_len)
        for i, v in enumerate(values)
    ]
