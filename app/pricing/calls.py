"""One model call's cost from its tokens and the price found: what the derive job writes.

Tokens as the OpenTelemetry GenAI conventions count them: ``gen_ai.usage.input_tokens``
includes the cached ones, ``cache_read.input_tokens`` (read from the provider's cache) and
``cache_creation.input_tokens`` (written to it) are parts of it; OpenAI's ``prompt_tokens``
and its ``cached_tokens`` count the same way. So, per million tokens::

    cost = uncached × input + cache_read × cached_input + cache_write × cache_write
           + output × output,   uncached = input_tokens − cache_read − cache_write

A cached price the table lacks bills those tokens as input. When the cache counts exceed
the input count, the input count evidently left them out (Anthropic's own usage fields are
disjoint), and all of it is uncached. Output tokens include reasoning tokens, as the
providers bill them.

The cached counts have no column: only pricing reads them, and the span's attributes keep
them under the GenAI names the receiver fills from their twins (:mod:`app.otlp.normalise`);
a span sent through the native API is read under any of those names.

Only ``llm`` spans are priced, and only once: a span with a cost (sent, or computed before)
or a ``cost_source`` (tried before) is left as it is, so a later price never rewrites a
stored cost. A call without a cost says why in ``cost_source``: :data:`NO_MODEL`,
:data:`NO_TOKENS` or :data:`NO_PRICE`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.otlp.normalise import CACHE_READ_TOKENS, CACHE_WRITE_TOKENS
from app.pricing.overrides import ProjectPrices
from app.pricing.table import Price

NO_MODEL, NO_TOKENS, NO_PRICE = "no model", "no tokens", "no price"
UNPRICED = (NO_MODEL, NO_TOKENS, NO_PRICE)


@dataclass(frozen=True)
class Usage:
    input: int
    output: int
    cache_read: int = 0
    cache_write: int = 0


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return 0
    return max(0, int(value))


def _first(attrs: Mapping[str, Any], names: tuple[str, tuple[str, ...]]) -> int:
    name, twins = names
    for key in (name, *twins):
        if key in attrs:
            return _count(attrs[key])
    return 0


def usage_of(span: Mapping[str, Any]) -> Usage | None:
    """The call's tokens; None when it sent neither an input nor an output count."""
    if span.get("input_tokens") is None and span.get("output_tokens") is None:
        return None
    attrs = span.get("attributes") or {}
    return Usage(_count(span.get("input_tokens")), _count(span.get("output_tokens")),
                 _first(attrs, CACHE_READ_TOKENS), _first(attrs, CACHE_WRITE_TOKENS))  # fmt: skip


def call_cost(usage: Usage, price: Price) -> float:
    """USD for ``usage`` at ``price``.

    >>> gpt_4o = Price(input=2.5, output=10.0, cached_input=1.25)
    >>> round(call_cost(Usage(input=1000, output=200, cache_read=400), gpt_4o), 6)
    0.004
    >>> round(call_cost(Usage(input=10, output=0, cache_read=500), gpt_4o), 6)  # disjoint
    0.00065
    """
    cached = usage.cache_read + usage.cache_write
    uncached = usage.input - cached if cached <= usage.input else usage.input
    read = price.cached_input if price.cached_input is not None else price.input
    write = price.cache_write if price.cache_write is not None else price.input
    per_million = (uncached * price.input + usage.cache_read * read
                   + usage.cache_write * write + usage.output * price.output)  # fmt: skip
    return per_million / 1_000_000


def model_of(span: Mapping[str, Any]) -> str | None:
    """The model a call is billed as: what the provider answered, else what was asked."""
    return span.get("response_model") or span.get("request_model") or None


def needs_price(span: Mapping[str, Any]) -> bool:
    return (span.get("kind") == "llm" and span.get("cost") is None
            and span.get("cost_source") is None)  # fmt: skip


def price_call(span: Mapping[str, Any], prices: ProjectPrices) -> tuple[float | None, str]:
    """``(cost, cost_source)`` for an LLM span without a cost: the cost and the price's
    label, or None and why there is none."""
    model = model_of(span)
    if model is None:
        return None, NO_MODEL
    usage = usage_of(span)
    if usage is None:
        return None, NO_TOKENS
    found = prices.find(model)
    if found is None:
        return None, NO_PRICE
    return call_cost(usage, found.price), found.label
