"""What a settings form's text becomes: a request model, or a refusal naming the field.

The forms go through the API's own request models (:func:`parse_form`), so a bad value is
refused with the API's words. The forms with a JSON text box (derived-field rules, a
monitor's detector parameters) read it with :func:`json_field`, which bounds its nesting
before parsing: Python's parser recurses once per ``[`` or ``{``, so 100,000 of them
raised ``RecursionError`` (a 500); the bound is the one ingest puts on attributes.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from pydantic import BaseModel, ValidationError

MAX_JSON_DEPTH = 32  # as ingest's default TELLTALE_MAX_ATTRIBUTE_DEPTH
MAX_JSON_CHARS = 100_000
# A JSON string, possessive so an unterminated one cannot backtrack.
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"')


class FormError(ValueError):
    """A form value the API's model or service refused; the message names the field."""


def validation_message(exc: ValidationError) -> str:
    """The API's 422 wording: ``field: message`` joined by ``; ``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e.get('loc', ())) or 'body'}: {e.get('msg', '')}"
        for e in exc.errors()
    )


def parse_form(model: type[BaseModel], data: dict[str, Any]) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise FormError(validation_message(exc)) from None


def nesting_depth(text: str) -> int:
    """How deep arrays and objects nest in JSON ``text``, brackets inside strings aside;
    linear in the text, no recursion.

    >>> nesting_depth('{"a": [1, {"b": "[[["}]}'), nesting_depth("[" * 100_000)
    (3, 100000)
    """
    skeleton = _STRING.sub("", text)
    steps = (1 if c in "[{" else -1 for c in skeleton if c in "[]{}")
    return max(accumulate(steps), default=0)


def json_field(
    text: str, *, field: str, max_depth: int = MAX_JSON_DEPTH, max_chars: int = MAX_JSON_CHARS
) -> Any:
    """The JSON value typed in the text box ``field``; :class:`FormError` naming the field
    when it is longer than ``max_chars``, nests deeper than ``max_depth`` or is not JSON."""
    if len(text) > max_chars:
        raise FormError(f"{field}: {len(text)} characters, over the limit of {max_chars}")
    if nesting_depth(text) > max_depth:
        raise FormError(f"{field}: JSON nests arrays/objects more than {max_depth} deep")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormError(
            f"{field}: not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})"
        ) from None
