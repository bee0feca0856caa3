"""Evaluation results sent on spans become scores of their trace.

Read, per convention (OpenInference encodes Phoenix annotations and evaluations as span
attributes, typically on an EVALUATOR span; OTel GenAI as an event):

- ``annotations.N.annotation.*``, ``evaluations.N.evaluation.*`` and their ``trace.``
  variants on an OpenInference span (one with ``openinference.span.kind``): ``name``,
  ``score``, ``label``, ``explanation``;
- a span event ``gen_ai.evaluation.result`` (OTel GenAI): ``gen_ai.evaluation.name``,
  ``gen_ai.evaluation.score.value``, ``.score.label``, ``gen_ai.evaluation.explanation``
  (the same event sent as a log record is read by :mod:`app.otlp.logs`).

A score needs a name (1-128 characters) and a numeric value within the bound of
:mod:`app.ingest.score_values` (one out of it is noted in the answer); a result with only a
label is no score (Telltale's statistics need the number) and is kept in the attributes.
Scores are ``proxy`` / ``online`` unless ``annotator_kind`` is ``HUMAN`` (source
``human``). The event id names the span and the result's position, so a re-sent span is a
duplicate.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

from app.ingest.events import ValidEvent
from app.ingest.score_values import OUT_OF_RANGE, score_value
from app.otlp.decode import DecodedSpan

_OI = re.compile(
    r"^(?:trace\.)?(annotations|evaluations)\.(\d{1,9})\.(annotation|evaluation)\."
    r"(name|score|label|explanation|annotator_kind)$"
)
EVALUATION_EVENT = "gen_ai.evaluation.result"
# Every key _OI matches starts with one of these.
EVALUATION_PREFIXES = ("annotations.", "evaluations.", "trace.")


def _text(value: Any, limit: int) -> str | None:
    return str(value)[:limit] if isinstance(value, str) and value else None


def _openinference(
    attrs: dict[str, Any], keys: Iterable[str] | None
) -> Iterator[tuple[str, dict[str, Any]]]:
    found: dict[tuple[str, int], dict[str, Any]] = {}
    for key in attrs if keys is None else keys:
        if not key.startswith(EVALUATION_PREFIXES):
            continue
        match = _OI.match(key)
        if match is not None:
            collection, index, _, field = match.groups()
            scope = "trace." if key.startswith("trace.") else ""
            found.setdefault((scope + collection, int(index)), {})[field] = attrs[key]
    for (collection, index), fields in sorted(found.items()):
        yield f"{collection}.{index}", fields


def _events(sp: DecodedSpan) -> Iterator[tuple[str, dict[str, Any]]]:
    for i, ev in enumerate(sp.events):
        if ev.get("name") != EVALUATION_EVENT:
            continue
        a = ev.get("attributes") or {}
        yield (
            f"event.{i}",
            {
                "name": a.get("gen_ai.evaluation.name"),
                "score": a.get("gen_ai.evaluation.score.value"),
                "label": a.get("gen_ai.evaluation.score.label"),
                "explanation": a.get("gen_ai.evaluation.explanation"),
            },
        )


def evaluation_scores(
    sp: DecodedSpan,
    index: int,
    at: datetime | None,
    *,
    keys: Iterable[str] | None = None,
    note: Callable[[str], None] | None = None,
) -> list[ValidEvent]:
    """The span's evaluation results as score events; ``keys``, when given, are the span's
    attribute keys that include every one starting with :data:`EVALUATION_PREFIXES`.
    ``note`` is told of each named result whose score is out of range (and so no score)."""
    out = []
    # Only OpenInference spans carry its annotation attributes: others skip the key scan.
    oi = "openinference.span.kind" in sp.attributes
    found = _openinference(sp.attributes, keys) if oi else ()
    for where, fields in (*found, *_events(sp)):
        name, value = _text(fields.get("name"), 128), score_value(fields.get("score"))
        if name is None or value is None:
            if name is not None and fields.get("score") is not None and note is not None:
                note(f"span {sp.span_id}: evaluation {where} score {OUT_OF_RANGE}; ignored")
            continue
        human = str(fields.get("annotator_kind") or "").upper() == "HUMAN"
        row: dict[str, Any] = {
            "trace_id": sp.trace_id,
            "name": name,
            "value": value,
            "kind": "proxy",
            "source": "human" if human else "online",
            "label": _text(fields.get("label"), 128),
            "explanation": _text(fields.get("explanation"), 2000),
        }
        if at is not None:
            row["created_at"] = at
        event_id = f"otlp:{sp.trace_id}:{sp.span_id}:eval:{where}"
        out.append(ValidEvent(index, event_id, "score", row))
    return out
