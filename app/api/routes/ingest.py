"""Native ingestion: ``POST /api/v1/ingest`` (mixed events) and ``/api/v1/embeddings`` (bulk)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from app.api.body import parse_json, read_batch, read_ingest
from app.api.deps import IngestKey, SettingsDep
from app.api.errors import unprocessable
from app.ingest.events import validate_events
from app.ingest.fields import FieldError
from app.ingest.limits import IngestLimits
from app.ingest.schemas import EmbeddingsBatch, IngestAnswer, IngestBatch, json_body
from app.ingest.service import ingest_batch, ingest_vectors
from app.ingest.vectors import BINARY_TYPE, from_binary, from_json

router = APIRouter(prefix="/api/v1", tags=["ingest"])


# The body is read raw (gzip, size limits) and checked per event by app.ingest.events:
# faster than pydantic, and a bad event is rejected alone. The models only document it.
@router.post("/ingest", openapi_extra=json_body(IngestBatch))
async def ingest(request: Request, principal: IngestKey, settings: SettingsDep) -> IngestAnswer:
    """A batch ``{"events": [{"id", "type", "body"}]}``; 200 with per-event rejections."""
    events = await read_batch(request, settings, field="events", route="/api/v1/ingest")
    valid, rejected = validate_events(events, limits=IngestLimits.from_settings(settings))
    return await ingest_batch(
        app_state=request.app.state,
        project_id=principal.project_id,
        valid=valid,
        rejected=rejected,
        total=len(events),
    )


def _embeddings_body() -> dict[str, Any]:
    """The JSON body's schema, and the binary body beside it."""
    extra = json_body(EmbeddingsBatch)
    extra["requestBody"]["content"][BINARY_TYPE] = {
        "schema": {
            "type": "string",
            "format": "binary",
            "description": "one line of JSON with the JSON body's fields but the vectors "
            "(dim required), a newline, then n x dim little-endian dtype values, row-major",
        }
    }
    return extra


@router.post("/embeddings", openapi_extra=_embeddings_body())
async def ingest_embeddings(
    request: Request, principal: IngestKey, settings: SettingsDep
) -> IngestAnswer:
    """Bulk vectors for one stream: ``vectors_b64`` (one base64 block, row-major) or
    ``vectors`` (array of arrays); optional ``sample_ids`` and ``ids`` (client event ids;
    default ``<stream>:<sample_id>`` so re-sends are duplicates). With ``Content-Type:
    application/vnd.telltale.vectors`` the same fields are a JSON header line and the raw
    vectors follow it (``app/ingest/vectors.py``)."""
    raw = await read_ingest(request, settings, route="/api/v1/embeddings")
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    limits = {"max_rows": settings.max_events_per_batch, "max_dim": settings.max_embedding_dim}
    with unprocessable(FieldError):
        if media == BINARY_TYPE:
            batch = from_binary(raw, **limits)
        else:
            batch = from_json(parse_json(raw), **limits)
    return await ingest_vectors(
        app_state=request.app.state, project_id=principal.project_id, batch=batch
    )
