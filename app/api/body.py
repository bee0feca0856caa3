"""Reading request bodies within limits: 413 before anything big is held in memory."""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

import orjson
from fastapi import HTTPException, Request

from app.metrics import INGEST_BYTES
from app.settings import Settings


async def read_body(request: Request, *, limit: int) -> bytes:
    """The raw body, un-gzipped when ``Content-Encoding: gzip``; 413 past ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise HTTPException(400, "Content-Length header is not a number")
        if int(declared) > limit:
            raise HTTPException(413, f"request body of {declared} bytes exceeds {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise HTTPException(413, f"request body exceeds {limit} bytes")
        chunks.append(chunk)
    body = b"".join(chunks)
    encoding = request.headers.get("content-encoding", "identity").lower().strip()
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise HTTPException(415, f"Content-Encoding {encoding!r} is not supported; use gzip")
    return _gunzip(body, limit)


async def read_ingest(request: Request, settings: Settings, *, route: str) -> bytes:
    """An ingest route's raw body (:func:`read_body`), counted in ``INGEST_BYTES`` as ``route``."""
    raw = await read_body(request, limit=settings.max_request_bytes)
    INGEST_BYTES.labels(route=route).inc(len(raw))
    return raw


async def read_batch(request: Request, settings: Settings, *, field: str, route: str) -> list[Any]:
    """The JSON body's ``field`` array (``{"events": [...]}``) for a per-item validator:
    422 when it is missing, 413 past ``max_events_per_batch`` items, both naming ``field``."""
    payload = parse_json(await read_ingest(request, settings, route=route))
    if not isinstance(payload, dict) or not isinstance(payload.get(field), list):
        raise HTTPException(422, f"{field}: required, must be an array of {field}")
    items: list[Any] = payload[field]
    if len(items) > settings.max_events_per_batch:
        raise HTTPException(
            413,
            f"{field}: {len(items)} {field} exceed the limit of {settings.max_events_per_batch}",
        )
    return items


def _gunzip(body: bytes, limit: int) -> bytes:
    # Decompress incrementally so a small gzip bomb cannot blow past the limit.
    decomp = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = decomp.decompress(body, limit + 1)
    except (zlib.error, gzip.BadGzipFile) as exc:
        raise HTTPException(400, f"body is not valid gzip: {exc}") from None
    if len(out) > limit or decomp.unconsumed_tail:
        raise HTTPException(413, f"decompressed body exceeds {limit} bytes")
    return out


def parse_json(body: bytes) -> Any:
    if not body:
        raise HTTPException(400, "request body is empty; expected JSON")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        # Python's json module writes NaN/Infinity literals; accept them here so the
        # validator can name the offending field instead of calling the body malformed.
        # It also keeps lone surrogate escapes ("\\ud800"), which the field checkers refuse.
        try:
            return json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise HTTPException(400, f"body is not valid JSON: {exc}") from None
        except RecursionError:
            raise HTTPException(400, "body nests arrays/objects too deeply to parse") from None
