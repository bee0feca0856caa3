"""One name per fact: models, tokens and error types under the GenAI names, whoever sent them.

Instrumentations disagree on names (docs/guides/instrumentations.md); the span keeps
every attribute it was sent and gains the GenAI name when only a twin was given (a value
sent under the GenAI name is never overwritten):

- ``gen_ai.response.model`` from OpenInference ``llm.model_name`` (what the provider
  answered, e.g. a dated snapshot); ``gen_ai.request.model`` from OpenInference's
  ``llm.invocation_parameters`` JSON ``model``, else OpenLLMetry's ``llm.request.model``;
- ``gen_ai.usage.input_tokens`` / ``output_tokens`` from ``gen_ai.usage.prompt_tokens`` /
  ``completion_tokens`` (older GenAI and OpenLLMetry), else ``llm.token_count.prompt`` /
  ``completion`` (OpenInference); ``gen_ai.usage.total_tokens`` from ``llm.usage.total_tokens``
  (OpenLLMetry), ``llm.token_count.total``, else input + output;
- ``gen_ai.usage.cache_read.input_tokens`` / ``cache_creation.input_tokens`` (the cached
  part of the input) from OpenLLMetry's and OpenLIT's ``gen_ai.usage.cache_read_input_tokens``
  / ``cache_creation_input_tokens``, else OpenInference's
  ``llm.token_count.prompt_details.cache_read`` / ``cache_write``;
- ``gen_ai.usage.cost`` from ``llm.cost.total`` (OpenInference) when sent;
- ``gen_ai.provider.name`` from ``gen_ai.system`` / ``llm.provider`` / ``llm.system``.

The error type is the exception event's ``exception.type`` when there is one, else
``error.type``, in both cases cleaned of Python's ``<class '...'>`` wrapping (OTel's
util-genai writes ``<class 'openai.InternalServerError'>``), so one failure has one name.
"""

from __future__ import annotations

import math
import re
from typing import Any

import orjson

from app.otlp.decode import DecodedSpan

_CLASS_REPR = re.compile(r"^<class '([^']+)'>$")
_OTEL_SPAN_KIND = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
# Cached input tokens, parts of the input count (the GenAI conventions; app/pricing/calls.py).
CACHE_READ_TOKENS = (
    "gen_ai.usage.cache_read.input_tokens",
    ("gen_ai.usage.cache_read_input_tokens", "llm.token_count.prompt_details.cache_read"),
)
CACHE_WRITE_TOKENS = (
    "gen_ai.usage.cache_creation.input_tokens",
    ("gen_ai.usage.cache_creation_input_tokens", "llm.token_count.prompt_details.cache_write"),
)
_TOKEN_TWINS = (
    ("gen_ai.usage.input_tokens", ("gen_ai.usage.prompt_tokens", "llm.token_count.prompt")),
    (
        "gen_ai.usage.output_tokens",
        ("gen_ai.usage.completion_tokens", "llm.token_count.completion"),
    ),
    ("gen_ai.usage.total_tokens", ("llm.usage.total_tokens", "llm.token_count.total")),
    ("gen_ai.usage.cost", ("llm.cost.total",)),
    CACHE_READ_TOKENS,
    CACHE_WRITE_TOKENS,
)


def clean_error_type(value: Any) -> str | None:
    """``<class 'openai.InternalServerError'>`` -> ``openai.InternalServerError``.

    >>> clean_error_type("<class 'openai.InternalServerError'>"), clean_error_type("")
    ('openai.InternalServerError', None)
    """
    if value in (None, ""):
        return None
    text = str(value).strip()
    match = _CLASS_REPR.match(text)
    return (match.group(1) if match else text)[:128] or None


def error_type(sp: DecodedSpan) -> str | None:
    for ev in sp.events:
        if ev["name"] == "exception" and ev["attributes"].get("exception.type"):
            return clean_error_type(ev["attributes"]["exception.type"])
    return clean_error_type(sp.attributes.get("error.type"))


def _number(value: Any) -> float | int | None:
    if type(value) is int:  # the usual token count, checked first (no bool here)
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


def _invocation_model(attrs: dict[str, Any]) -> str | None:
    params = attrs.get("llm.invocation_parameters")
    if isinstance(params, str) and '"model"' in params:
        try:
            params = orjson.loads(params)
        except orjson.JSONDecodeError:
            return None
    model = params.get("model") if isinstance(params, dict) else None
    return model if isinstance(model, str) and model else None


def _models_and_usage(attrs: dict[str, Any]) -> None:
    # Membership tests first: this runs for every LLM span, and most send the GenAI names.
    if "gen_ai.response.model" not in attrs and isinstance(attrs.get("llm.model_name"), str):
        attrs["gen_ai.response.model"] = attrs["llm.model_name"]
    if "gen_ai.request.model" not in attrs:
        model = _invocation_model(attrs) or attrs.get("llm.request.model")
        if isinstance(model, str) and model:
            attrs["gen_ai.request.model"] = model
    for name, twins in _TOKEN_TWINS:
        if name in attrs:
            continue
        for twin in twins:
            if twin in attrs and _number(attrs[twin]) is not None:
                attrs[name] = attrs[twin]
                break
    if "gen_ai.usage.total_tokens" not in attrs:
        given_in = _number(attrs.get("gen_ai.usage.input_tokens"))
        given_out = _number(attrs.get("gen_ai.usage.output_tokens"))
        if given_in is not None and given_out is not None:
            attrs["gen_ai.usage.total_tokens"] = given_in + given_out


def normalise(attrs: dict[str, Any], sp: DecodedSpan, kind: str) -> dict[str, Any]:
    """Fill the GenAI names from their twins (LLM and embedding spans) and add the OTLP
    context; returns ``attrs``."""
    if kind in ("llm", "embedding"):
        _models_and_usage(attrs)
    if "gen_ai.provider.name" not in attrs:
        for legacy in ("gen_ai.system", "llm.provider", "llm.system"):
            if isinstance(attrs.get(legacy), str):
                attrs["gen_ai.provider.name"] = attrs[legacy]
                break
    if sp.scope:
        attrs["otel.scope.name"] = sp.scope
    if sp.kind in _OTEL_SPAN_KIND:
        attrs["otel.span.kind"] = _OTEL_SPAN_KIND[sp.kind]
    if sp.status_message:
        attrs["otel.status_message"] = sp.status_message
    if sp.events:
        attrs["otel.events"] = sp.events
    return attrs


def _int(value: Any) -> int | None:
    if type(value) is int:  # what instrumentations send, checked first (no bool here)
        return value if 0 <= value < 2**31 else None
    number = _number(value)
    if number is None or number != int(number) or not 0 <= number < 2**31:
        return None
    return int(number)


# The columns of a span that is no LLM or embedding call (models and tokens are theirs).
NO_COLUMNS: dict[str, Any] = dict.fromkeys(
    ("request_model", "response_model", "input_tokens", "output_tokens", "total_tokens", "cost")
)


def columns(attrs: dict[str, Any]) -> dict[str, Any]:
    """The span's first-class columns from its normalised attributes (after normalise()).

    A value of the wrong type or out of range leaves its column empty (the attribute stays).
    """
    cost = _number(attrs.get("gen_ai.usage.cost"))
    request, response = attrs.get("gen_ai.request.model"), attrs.get("gen_ai.response.model")
    return {
        "request_model": request[:128] if isinstance(request, str) and request else None,
        "response_model": response[:128] if isinstance(response, str) and response else None,
        "input_tokens": _int(attrs.get("gen_ai.usage.input_tokens")),
        "output_tokens": _int(attrs.get("gen_ai.usage.output_tokens")),
        "total_tokens": _int(attrs.get("gen_ai.usage.total_tokens")),
        "cost": float(cost) if cost is not None and cost >= 0 else None,
    }


def latency_ms(start_ns: int, end_ns: int) -> float | None:
    """``(end - start)`` in milliseconds; None without both times or when end < start."""
    if start_ns <= 0 or end_ns <= 0 or end_ns < start_ns:
        return None
    return (end_ns - start_ns) / 1e6
