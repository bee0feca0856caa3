"""Attribute maps vetted before they are stored, so one bad value cannot poison storage.

Attributes are free-form JSON, kept as JSON text (SQLite) or JSONB (PostgreSQL) and merged
and serialised again on every later write and read of their trace. A value either store
refuses, or that breaks reading it back, would fail every batch touching that trace; so it
is refused here, with its event, naming the key path:

- NUL and lone surrogates in keys and strings (:func:`app.ingest.fields.check_text`);
- NaN and infinities: JSON has none (SQLite then calls the stored text malformed);
- integers past 64 bits (JSONB and orjson refuse them);
- values nested deeper than ``max_depth`` arrays/maps;
- a map over ``max_bytes`` once written as JSON.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from app.ingest.fields import FieldError, check_text
from app.ingest.limits import IngestLimits

_INT64 = (-(2**63), 2**63 - 1)


class _TooDeep(Exception):
    def __init__(self, field: str) -> None:
        self.field = field


def opt_attributes(
    body: dict[str, Any], key: str, prefix: str, limits: IngestLimits
) -> dict[str, Any]:
    """``body[key]`` as a vetted attributes map (``{}`` when absent)."""
    return vetted_attributes(body, key, prefix, limits)[0]


def vetted_attributes(
    body: dict[str, Any], key: str, prefix: str, limits: IngestLimits
) -> tuple[dict[str, Any], bytes]:
    """:func:`opt_attributes` and the map as JSON, which vetting it wrote anyway: the
    PostgreSQL store copies that into the JSONB column instead of writing it again."""
    value = body.get(key)
    field = f"{prefix}.{key}"
    if value is None:
        return {}, b"{}"
    if not isinstance(value, dict):
        raise FieldError(field, f"must be an object, not {type(value).__name__}")
    depth = limits.max_attribute_depth
    try:
        encoded: bytes | None = orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        encoded = None  # the walk below names the value orjson refused
    if encoded is None or not _plainly_storable(encoded, depth):
        try:
            _check_map(value, field, depth)
        except _TooDeep as exc:
            raise FieldError(exc.field, f"nests arrays/maps more than {depth} deep") from None
    if encoded is None:
        encoded = orjson.dumps(value)
    if len(encoded) > limits.max_attributes_bytes:
        raise FieldError(
            field, f"is {len(encoded)} bytes as JSON; the limit is {limits.max_attributes_bytes}"
        )
    return value, encoded


def _plainly_storable(encoded: bytes, depth: int) -> bool:
    """Whether the map's JSON proves the walk would find nothing (the fast path).

    orjson already refused lone surrogates and integers past 64 bits; what it lets through
    shows in its output: a NUL as ``\\u0000``, NaN and infinities as ``null``, and nesting
    as brackets (their count bounds the depth). A map with none of these, which is what
    instrumentations send, skips the walk; any other goes through it for an exact answer
    naming the field. Measured on the ingest bench's spans: validation 47k -> 71k events/s.
    """
    return (
        b"\\u0000" not in encoded
        and b"null" not in encoded
        and encoded.count(b"[") + encoded.count(b"{") <= depth
    )


def _check_map(value: dict[Any, Any], field: str, depth: int) -> None:
    for k, v in value.items():
        if "\x00" in k or not k.isascii():
            check_text(k, f"{field}: key {k[:40]!r}")
        _check_value(v, f"{field}.{k[:64]}", depth)


def _check_value(value: Any, field: str, depth: int) -> None:
    # ``depth`` is how many more arrays/maps may open below this point.
    kind = type(value)
    if kind is str:
        check_text(value, field)
    elif kind is int:
        if not _INT64[0] <= value <= _INT64[1]:
            raise FieldError(field, "integer does not fit in 64 bits")
    elif kind is float:
        if not math.isfinite(value):
            raise FieldError(field, "must be finite (no NaN or infinity)")
    elif kind is dict or kind is list:
        if depth <= 0:
            raise _TooDeep(field)
        if kind is dict:
            _check_map(value, field, depth - 1)
        else:
            for n, item in enumerate(value):
                _check_value(item, f"{field}[{n}]", depth - 1)
    elif value is not None and kind is not bool:
        raise FieldError(field, f"must be a JSON value, not {kind.__name__}")
