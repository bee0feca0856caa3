"""A labeling queue's settings form: a saved queue as the form's values, the form's values
as the API's body (:class:`~app.labeling.schemas.QueueCreate` or
:class:`~app.labeling.schemas.QueueUpdate`), and a refusal's message split by field so each
part shows beside the input it names.

Nothing is validated here: blank inputs are left out (the model's defaults apply on create,
the saved value stays on edit), lists are split at commas, and every value goes to the
API's models as typed, so a bad one is refused in the API's words.
"""

from __future__ import annotations

import re
from typing import Any

from app.labeling.schemas import QueueCreate
from app.models.labeling import LabelQueue

NUMBERS = ("budget_per_period", "fill_interval_seconds", "lease_seconds", "reference_size")
SELECTION = ("streams", "agents")  # comma-separated; sources are checkboxes
SOURCES = ("production", "eval", "shadow")
SCHEMA = ("values", "correct_values", "min", "max")
INPUTS = {*NUMBERS, *SELECTION, *SCHEMA, "sources", "name", "description", "label_name",
          "label_type"}  # fmt: skip
# Where the models put an error that belongs to one input: the selection's "select at
# least one stream or one agent" goes beside the streams, a schema's own check beside
# its values.
ALIASES = {"selection": "streams", "label_schema": "label_type", "categorical": "values",
           "score": "min"}  # fmt: skip


def _text(value: Any) -> str:
    if value is None:
        return ""
    return f"{value:g}" if isinstance(value, float) else str(value)


DEFAULT_FORM: dict[str, Any] = {
    **{k: _text(QueueCreate.model_fields[k].default) for k in NUMBERS if k != "budget_per_period"},
    "budget_per_period": "50", "label_name": "success", "label_type": "categorical",
    "values": "correct, incorrect, can't tell", "correct_values": "correct", "sources": [],
}  # fmt: skip


def form_of(queue: LabelQueue) -> dict[str, Any]:
    """A saved queue as the form's values."""
    schema, sel = queue.label_schema or {}, queue.selection or {}
    out: dict[str, Any] = {
        "queue": queue.name, "name": queue.name, "description": queue.description,
        "label_name": queue.label_name, "label_type": schema.get("type", "categorical"),
        "values": ", ".join(schema.get("values") or []),
        "correct_values": ", ".join(schema.get("correct_values") or []),
        "min": _text(schema.get("min")), "max": _text(schema.get("max")),
        "sources": list(sel.get("sources") or []),
    }  # fmt: skip
    for k in NUMBERS:
        out[k] = _text(getattr(queue, k))
    for k in SELECTION:
        out[k] = ", ".join(sel.get(k) or [])
    return out


def _given(typed: dict[str, Any], name: str) -> str | None:
    value = str(typed.get(name, "")).strip()
    return value or None


def _list(text: str | None) -> list[str]:
    return [p.strip() for p in (text or "").split(",") if p.strip()]


def body_of(typed: dict[str, Any], *, editing: bool) -> dict[str, Any]:
    """The API's body for the form: :class:`QueueCreate`'s, or with ``editing``
    :class:`QueueUpdate`'s (no name: a queue's name is its address)."""
    body: dict[str, Any] = {k: _given(typed, k) for k in NUMBERS if _given(typed, k)}
    body["description"] = str(typed.get("description", "")).strip()
    body["selection"] = {k: _list(_given(typed, k)) for k in SELECTION}
    body["selection"]["sources"] = list(typed.get("sources") or [])
    if _given(typed, "label_name"):
        body["label_name"] = _given(typed, "label_name")
    kind = _given(typed, "label_type") or "categorical"
    if kind == "score":
        body["label_schema"] = {"type": "score", "min": _given(typed, "min"),
                                "max": _given(typed, "max")}  # fmt: skip
    else:
        correct = _list(_given(typed, "correct_values"))
        body["label_schema"] = {"type": kind, "values": _list(_given(typed, "values")),
                                "correct_values": correct or None}  # fmt: skip
    if not editing:
        body["name"] = str(typed.get("name", "")).strip()
    return body


# One part of the API's 422 wording: ``a.b.0: message`` (see form_values.validation_message).
_PART = re.compile(r"; (?=[A-Za-z_][\w.\[\]-]*: )")


def _input_of(loc: str) -> str | None:
    steps = [s for s in re.split(r"[.\[\]]", loc) if s and not s.isdigit()]
    for step in reversed(steps):
        if step in INPUTS:
            return step
    for step in reversed(steps):
        if step in ALIASES:
            return ALIASES[step]
    return None


def field_errors(message: str | None) -> dict[str, str]:
    """Each part of a refusal under the input it names (``label_schema.categorical.values:
    ...`` under values); parts that name none stay in the message above the form."""
    out: dict[str, str] = {}
    for part in _PART.split(message or ""):
        loc, sep, said = part.partition(": ")
        name = _input_of(loc) if sep else None
        if name is not None:
            said = said.removeprefix("Value error, ")
            out[name] = f"{out[name]}; {said}" if name in out else said
    return out
