"""Field checkers for ingest bodies. Each raises ``FieldError`` naming the field.

Hand-written rather than pydantic: this runs for every one of tens of thousands of spans a
second, and the checks are simple enough that plain code is both faster and clearer.
"""

from __future__ import annotations

import binascii
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from app.db import as_utc


class FieldError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


_MISSING = object()
# How far into the future a client may date a row it sends (docs: native-api): clock
# skew, not later. Retention judges rows by this time, so a row dated years ahead would
# outlive its event id and be stored again when re-sent.
MAX_FUTURE = timedelta(days=1)


def req_str(body: dict[str, Any], key: str, prefix: str, max_len: int = 128) -> str:
    value = body.get(key, _MISSING)
    if value is _MISSING or value is None or value == "":
        raise FieldError(f"{prefix}.{key}", "is required")
    if _plain_text(value, max_len):
        return value  # type: ignore[no-any-return]
    return as_str(value, f"{prefix}.{key}", max_len)


def opt_str(body: dict[str, Any], key: str, prefix: str, max_len: int = 128) -> str | None:
    value = body.get(key)
    if value is None or _plain_text(value, max_len):
        return value
    return as_str(value, f"{prefix}.{key}", max_len)


def _plain_text(value: Any, max_len: int) -> bool:
    """Whether ``value`` is a string :func:`as_str` would pass unchanged, checked without
    naming the field: most spans carry a dozen such strings, and building each field's
    name ahead of an error that never comes was a tenth of validating a span."""
    return type(value) is str and len(value) <= max_len and value.isascii() and "\x00" not in value


def as_str(value: Any, field: str, max_len: int) -> str:
    """A string (or an integer, as its text) of at most ``max_len`` characters."""
    if type(value) is str:  # the common case, checked first: this runs for every field
        if len(value) > max_len:
            raise FieldError(field, f"must be at most {max_len} characters")
        if "\x00" in value or not value.isascii():  # inline: the common text needs no call
            check_text(value, field)
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(field, f"must be a string, not {type(value).__name__}")
    text = str(value)
    if len(text) > max_len:
        raise FieldError(field, f"must be at most {max_len} characters")
    return text


def check_text(text: str, field: str) -> None:
    """Refuse what no store can hold: NUL (PostgreSQL text and JSONB refuse it) and lone
    UTF-16 surrogates such as ``"\\ud800"`` (valid JSON escapes, but not encodable as UTF-8)."""
    if "\x00" in text:
        raise FieldError(field, "contains a NUL character (U+0000)")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise FieldError(
                field, "contains a lone UTF-16 surrogate (not valid Unicode)"
            ) from None


def choice(
    body: dict[str, Any], key: str, prefix: str, allowed: tuple[str, ...], default: str
) -> str:
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, str) or value not in allowed:
        raise FieldError(f"{prefix}.{key}", f"must be one of {', '.join(allowed)}; got {value!r}")
    return value


def opt_float(
    body: dict[str, Any], key: str, prefix: str, lo: float | None = None, hi: float | None = None
) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    return _as_float(value, f"{prefix}.{key}", lo, hi)


def req_float(body: dict[str, Any], key: str, prefix: str) -> float:
    if body.get(key) is None:
        raise FieldError(f"{prefix}.{key}", "is required")
    return _as_float(body[key], f"{prefix}.{key}", None, None)


def _as_float(value: Any, field: str, lo: float | None, hi: float | None) -> float:
    kind = type(value)
    if kind is not float and kind is not int:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FieldError(field, f"must be a number, not {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:  # JSON allows an integer of any length
        raise FieldError(field, "is past the range of a 64-bit float") from None
    if not math.isfinite(number):
        raise FieldError(field, "must be finite (no NaN or infinity)")
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        raise FieldError(field, f"must be between {lo} and {hi}")
    return number


def opt_int(body: dict[str, Any], key: str, prefix: str, lo: int = 0) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(f"{prefix}.{key}", f"must be an integer, not {type(value).__name__}")
    if value < lo or value > 2**31 - 1:
        raise FieldError(f"{prefix}.{key}", f"must be an integer >= {lo}")
    return value


def opt_created_at(body: dict[str, Any], prefix: str) -> datetime | None:
    """A client's ``created_at``: :func:`opt_time`, at most :data:`MAX_FUTURE` ahead."""
    value = opt_time(body, "created_at", prefix)
    if value is not None and value > datetime.now(UTC) + MAX_FUTURE:
        raise FieldError(
            f"{prefix}.created_at",
            f"is more than {MAX_FUTURE.days} day in the future ({value.isoformat()})",
        )
    return value


def opt_time(body: dict[str, Any], key: str, prefix: str) -> datetime | None:
    """ISO-8601 (``Z`` or an offset; naive is UTC) or epoch seconds."""
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, str):  # the common case first; the field is named only for an error
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise FieldError(
                f"{prefix}.{key}", f"is not an ISO-8601 time: {value[:40]!r}"
            ) from None
        if parsed.tzinfo is UTC:  # "Z" or "+00:00": nothing to convert
            return parsed
        try:
            return as_utc(parsed)
        except ValueError as exc:
            raise FieldError(f"{prefix}.{key}", str(exc)) from None
    field = f"{prefix}.{key}"
    if isinstance(value, bool):
        raise FieldError(field, "must be an ISO-8601 time or epoch seconds")
    if isinstance(value, int | float):
        if not math.isfinite(value) or not 0 <= value < 32503680000:
            raise FieldError(field, "epoch seconds out of range")
        return datetime.fromtimestamp(value, UTC)
    raise FieldError(
        field, f"must be an ISO-8601 time or epoch seconds, not {type(value).__name__}"
    )


_DTYPES: dict[str, np.dtype[Any]] = {"float32": np.dtype("<f4"), "float16": np.dtype("<f2")}


def decode_vector(body: dict[str, Any], prefix: str, max_dim: int) -> np.ndarray:
    """A finite float32 vector from ``vector`` (JSON list) or ``vector_b64`` + ``dtype``."""
    if body.get("vector") is not None:
        raw = body["vector"]
        if not isinstance(raw, list) or not raw:
            raise FieldError(f"{prefix}.vector", "must be a non-empty array of numbers")
        if any(isinstance(x, bool) or not isinstance(x, int | float) for x in raw):
            raise FieldError(f"{prefix}.vector", "must contain only numbers")
        with np.errstate(over="ignore"):  # past float32's range is inf: refused below
            vec = np.asarray(raw, dtype=np.float64).astype(np.float32)
        field = f"{prefix}.vector"
    elif body.get("vector_b64") is not None:
        field = f"{prefix}.vector_b64"
        vec = decode_b64(body["vector_b64"], body.get("dtype", "float32"), field, f"{prefix}.dtype")
    else:
        raise FieldError(f"{prefix}.vector", "is required (or vector_b64 with dtype)")
    if vec.size > max_dim:
        raise FieldError(field, f"dimension {vec.size} exceeds the maximum {max_dim}")
    if not np.isfinite(vec).all():
        raise FieldError(field, "contains NaN or infinite values")
    return vec


def vector_dtype(name: Any, field: str) -> np.dtype[Any]:
    """The numpy dtype a body's ``dtype`` names (float32 or float16, little-endian)."""
    if name not in _DTYPES:
        raise FieldError(field, f"must be float32 or float16; got {name!r}")
    return _DTYPES[name]


def decode_b64(raw: Any, dtype_name: Any, field: str, dtype_field: str) -> np.ndarray:
    dtype = vector_dtype(dtype_name, dtype_field)
    if not isinstance(raw, str) or not raw:
        raise FieldError(field, "must be a non-empty base64 string")
    try:
        # strict_mode refuses what b64decode(validate=True) refuses (a character outside
        # the alphabet, bad padding, data after it) without the regex pass over the whole
        # string that validate=True makes first: 13% of an embeddings batch's server time.
        data = binascii.a2b_base64(raw, strict_mode=True)
    except (binascii.Error, ValueError):
        raise FieldError(field, "is not valid base64") from None
    if not data or len(data) % dtype.itemsize:
        raise FieldError(field, f"byte length {len(data)} is not a multiple of {dtype.itemsize}")
    return np.frombuffer(data, dtype=dtype).astype("<f4")
