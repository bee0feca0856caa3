"""Bulk vectors for one stream (``POST /api/v1/embeddings``), kept as columns to the COPY.

A batch is thousands of vectors. Turning each into an event dict and then a row dict, and
checking its ids one call at a time, cost about a third of the server's time per vector;
here a batch stays one float32 blob and three id lists from the body to the database.

Two bodies carry the same fields:

- JSON (``application/json``): ``vectors_b64`` (one base64 block, row-major) with ``dim``
  and ``dtype``, or ``vectors`` (an array of arrays).
- Binary (``application/vnd.telltale.vectors``): one line of JSON with every field but the
  vectors (``dim`` required), a newline, then the ``n × dim`` values as little-endian
  ``dtype``, row-major. No base64 to decode and no 5 MB string to parse: a third less
  server time per vector than the JSON body (docs/benchmarks/index.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import orjson

from app.ingest.fields import FieldError, as_str, decode_b64, opt_str, req_str, vector_dtype

BINARY_TYPE = "application/vnd.telltale.vectors"

# A header of 10,000 ids of 128 characters, with room to spare.
_MAX_HEADER = 4 * 1024 * 1024


@dataclass(frozen=True)
class VectorBatch:
    """``n`` vectors of one stream: ``blob`` holds them as row-major little-endian float32."""

    stream: str
    model: str
    dim: int
    blob: bytes
    event_ids: list[str]
    sample_ids: list[str | None]
    trace_ids: list[str | None]

    def __len__(self) -> int:
        return len(self.event_ids)

    def vector(self, i: int) -> bytes:
        width = self.dim * 4
        return self.blob[i * width : (i + 1) * width]


def from_json(payload: Any, *, max_rows: int, max_dim: int) -> VectorBatch:
    """The batch in a parsed JSON body; ``FieldError`` names the first bad field."""
    if not isinstance(payload, dict):
        raise FieldError("body", "must be a JSON object")
    if payload.get("vectors_b64") is not None:
        dim = _dim(payload, max_dim)
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
        matrix = _json_matrix(payload["vectors"], max_dim)
    else:
        raise FieldError("body.vectors", "is required (or vectors_b64 with dim and dtype)")
    return _batch(payload, matrix, max_rows=max_rows)


def from_binary(raw: bytes, *, max_rows: int, max_dim: int) -> VectorBatch:
    """The batch in a binary body: a JSON header line, ``\\n``, then the raw values."""
    end = raw.find(b"\n", 0, _MAX_HEADER)
    if end < 0:
        raise FieldError("header", "must be one line of JSON followed by a newline")
    try:
        header = orjson.loads(raw[:end])
    except orjson.JSONDecodeError as exc:
        raise FieldError("header", f"is not valid JSON: {exc}") from None
    if not isinstance(header, dict):
        raise FieldError("header", "must be a JSON object")
    for key in ("vectors", "vectors_b64"):
        if key in header:
            raise FieldError(f"header.{key}", "the vectors follow the header as raw bytes")
    dim = _dim(header, max_dim, prefix="header")
    dtype = vector_dtype(header.get("dtype", "float32"), "header.dtype")
    size = len(raw) - end - 1
    if size <= 0 or size % (dim * dtype.itemsize):
        raise FieldError(
            "body", f"{size} bytes after the header are not a whole number of {dim}-d vectors"
        )
    matrix = np.frombuffer(raw, dtype=dtype, offset=end + 1).reshape(-1, dim)
    return _batch(header, matrix, max_rows=max_rows, prefix="header")


def _dim(payload: dict[str, Any], max_dim: int, *, prefix: str = "body") -> int:
    dim = payload.get("dim")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
        raise FieldError(f"{prefix}.dim", "is required with raw vectors (a positive integer)")
    if dim > max_dim:
        raise FieldError(f"{prefix}.dim", f"dimension {dim} exceeds the maximum {max_dim}")
    return dim


def _json_matrix(raw: Any, max_dim: int) -> np.ndarray:
    if not isinstance(raw, list) or not raw or not all(isinstance(r, list) for r in raw):
        raise FieldError("body.vectors", "must be a non-empty array of arrays of numbers")
    if len({len(r) for r in raw}) != 1:
        raise FieldError("body.vectors", "all vectors must have the same dimension")
    try:
        with np.errstate(over="ignore"):  # past float32's range is inf: refused later
            matrix = np.asarray(raw, dtype=np.float64).astype(np.float32)
    except (TypeError, ValueError):
        raise FieldError("body.vectors", "must contain only numbers") from None
    if matrix.ndim != 2:
        raise FieldError("body.vectors", "must be an array of arrays of numbers")
    if matrix.shape[1] > max_dim:
        raise FieldError(
            "body.vectors", f"dimension {matrix.shape[1]} exceeds the maximum {max_dim}"
        )
    return matrix


def _batch(
    fields: dict[str, Any], matrix: np.ndarray, *, max_rows: int, prefix: str = "body"
) -> VectorBatch:
    stream = req_str(fields, "stream", prefix)
    model = opt_str(fields, "model", prefix) or ""
    n = matrix.shape[0]
    if n > max_rows:
        raise FieldError("body.vectors", f"{n} vectors exceed the limit of {max_rows}")
    bad = ~np.isfinite(matrix).all(axis=1)
    if bad.any():
        raise FieldError(f"body.vectors[{int(np.argmax(bad))}]", "contains NaN or infinite values")
    sample_ids = _per_vector(fields, "sample_ids", n, 128, prefix)
    ids = _per_vector(fields, "ids", n, 200, prefix)
    if ids is None and sample_ids is None:
        raise FieldError(
            f"{prefix}.ids", "ids or sample_ids is required so re-sends are idempotent"
        )
    trace_ids = _per_vector(fields, "trace_ids", n, 64, prefix, nullable=True)
    sids: list[str | None] = sample_ids if sample_ids is not None else [None] * n
    if ids is not None:
        event_ids = cast(list[str], ids)  # not nullable: every value is a string
    else:
        event_ids = [f"{stream}:{sid}" for sid in sids]
        if max(map(len, event_ids)) > 200:  # stream and sample id may each be within limits
            i = next(i for i, eid in enumerate(event_ids) if len(eid) > 200)
            raise FieldError(
                f"{prefix}.sample_ids[{i}]",
                "with the stream it makes an event id over 200 characters; send ids",
            )
    return VectorBatch(
        stream=stream,
        model=model,
        dim=int(matrix.shape[1]),
        blob=np.ascontiguousarray(matrix, dtype="<f4").tobytes(),
        event_ids=event_ids,
        sample_ids=sids,
        trace_ids=trace_ids if trace_ids is not None else [None] * n,
    )


def _per_vector(
    fields: dict[str, Any], key: str, n: int, max_len: int, prefix: str, *, nullable: bool = False
) -> list[str | None] | None:
    """``fields[key]``: one string (or integer) per vector, or absent.

    The common list, all plain ASCII strings within the limit, is checked in a few passes
    over the whole list; anything else goes value by value so the error names its index.
    """
    values = fields.get(key)
    if values is None:
        return None
    field = f"{prefix}.{key}"
    if not isinstance(values, list) or len(values) != n:
        raise FieldError(field, f"must be an array of {n} strings, one per vector")
    if all(type(v) is str for v in values):
        text = "".join(values)
        if text.isascii() and "\x00" not in text and max(map(len, values)) <= max_len:
            return values  # type: ignore[no-any-return]
    return [
        None if v is None and nullable else as_str(v, f"{field}[{i}]", max_len)
        for i, v in enumerate(values)
    ]
