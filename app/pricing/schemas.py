"""The model-prices API's bodies and answers (``/api/v1/project/model-prices``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from app.pricing.coverage import Coverage
from app.pricing.overrides import Found
from app.pricing.table import MAX_MODEL_CHARS, PriceTable, bare
from app.request_model import RequestModel
from app.response_model import ResponseModel, Time

MAX_PROJECT_PRICES = 500
# USD per million tokens: the dearest listed model is about $600 (o1-pro output); this
# bound only refuses a price typed per token or per thousand by mistake of scale 1,000,000.
MAX_PER_MILLION = 100_000.0
PerMillion = Annotated[float, Field(ge=0.0, le=MAX_PER_MILLION, allow_inf_nan=False)]


class ModelPriceIn(RequestModel):
    model: str = Field(
        min_length=1, max_length=MAX_MODEL_CHARS,
        description="a model name as the calls report it (case, a provider prefix and a "
        "snapshot date do not matter), or a pattern with `*`",
    )  # fmt: skip
    input_per_million: PerMillion = Field(description="USD per million input tokens")
    output_per_million: PerMillion = Field(description="USD per million output tokens")
    cached_input_per_million: PerMillion | None = Field(
        None, description="USD per million cached input tokens (null: the input price)"
    )
    cache_write_per_million: PerMillion | None = Field(
        None, description="USD per million tokens written to the cache (null: the input price)"
    )

    @field_validator("model")
    @classmethod
    def _name(cls, value: str) -> str:
        name = value.strip().lower()
        if not name or any(c.isspace() for c in name):
            raise ValueError("a model name has no spaces (use * to match several)")
        if name.replace("*", "") == "" and name != "*":
            raise ValueError("one * matches every model; more say nothing more")
        # A name is stored as the lookup reads it (``openai/gpt-4o`` is ``gpt-4o``); a
        # pattern as written, matched against each of the names a call is looked up by.
        return name if "*" in name else bare(name)


class ModelPricesIn(RequestModel):
    """The project's whole set: prices left out are deleted."""

    prices: list[ModelPriceIn] = Field(max_length=MAX_PROJECT_PRICES)

    @field_validator("prices")
    @classmethod
    def _once_each(cls, prices: list[ModelPriceIn]) -> list[ModelPriceIn]:
        seen: dict[str, int] = {}
        for i, p in enumerate(prices):
            if p.model in seen:
                raise ValueError(
                    f"[{i}].model: {p.model!r} is priced twice (also [{seen[p.model]}])"
                )
            seen[p.model] = i
        return prices


class ModelPriceOut(ResponseModel):
    model: str
    input_per_million: float
    output_per_million: float
    cached_input_per_million: float | None
    cache_write_per_million: float | None
    updated_at: Time


class PriceTableOut(ResponseModel):
    version: str = Field(description="the date the shipped table was made")
    models: int
    units: str = "USD per million tokens"
    derived_from: list[dict[str, Any]]

    @classmethod
    def of(cls, table: PriceTable) -> PriceTableOut:
        return cls(version=table.version, models=len(table.entries),
                   derived_from=list(table.derived_from))  # fmt: skip


class PriceFoundOut(ResponseModel):
    """The price a model's calls are billed at, and where it comes from."""

    model: str
    matched: str
    by: Literal["project", "table"]
    input_per_million: float
    output_per_million: float
    cached_input_per_million: float | None
    cache_write_per_million: float | None
    source: str | None
    cost_source: str = Field(description="what a cost computed with it records")

    @classmethod
    def of(cls, model: str, found: Found) -> PriceFoundOut:
        p = found.price
        return cls(model=model, matched=found.matched, by=found.by,
                   input_per_million=p.input, output_per_million=p.output,
                   cached_input_per_million=p.cached_input, cache_write_per_million=p.cache_write,
                   source=found.source, cost_source=found.label)  # fmt: skip


class ModelCoverageOut(ResponseModel):
    model: str
    calls: int
    unpriced_calls: int
    has_price: bool


class CoverageOut(ResponseModel):
    days: int
    calls: int
    unpriced_calls: int
    share: float | None
    sentence: str | None
    models: list[ModelCoverageOut]

    @classmethod
    def of(cls, c: Coverage) -> CoverageOut:
        return cls(days=c.days, calls=c.calls, unpriced_calls=c.unpriced_calls, share=c.share,
                   sentence=c.sentence, models=[ModelCoverageOut.model_validate(m)
                                                for m in c.models])  # fmt: skip


class ModelPricesOut(ResponseModel):
    prices: list[ModelPriceOut] = Field(description="the project's own prices")
    table: PriceTableOut
    coverage: CoverageOut
    found: PriceFoundOut | None = Field(
        None, description="the price of the `model` asked for; null without one or when none"
    )
