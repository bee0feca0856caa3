"""The base of every JSON request body: strings the databases can store, checked once.

PostgreSQL refuses a NUL (``\\u0000``) in text and JSONB, and a lone UTF-16 surrogate
(``\\ud800``) cannot be encoded as UTF-8 by either driver. Checked per field, every schema
would need the same validator on every string; here one ``after`` validator walks the
parsed body and names the first offending field, so the answer is a 422 saying where.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel, model_validator


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _strings(getattr(value, name), f"{path}.{name}" if path else name)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield f"{path}.{k} (key)", str(k)
            yield from _strings(v, f"{path}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]")


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None.

    >>> unstorable("ok"), unstorable("a\\x00b"), unstorable("\\ud800")
    (None, 'contains a NUL character', 'contains a lone surrogate')
    """
    if "\x00" in text:
        return "contains a NUL character"
    if any("\ud800" <= c <= "\udfff" for c in text):
        return "contains a lone surrogate"
    return None


class RequestModel(BaseModel):
    """``BaseModel`` for request bodies: refuses strings no database can store."""

    @model_validator(mode="after")
    def _storable_strings(self) -> RequestModel:
        for path, text in _strings(self, ""):
            problem = unstorable(text)
            if problem is not None:
                raise ValueError(f"{path}: {problem}")
        return self
