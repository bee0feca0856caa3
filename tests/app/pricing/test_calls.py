"""A call's cost from its tokens and price; a project's prices win over the table; a call
that cannot be priced says why."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from app.pricing.calls import NO_MODEL, NO_PRICE, NO_TOKENS, Usage, call_cost, price_call
from app.pricing.overrides import prices_of
from app.pricing.table import Price, shipped_table

AT = datetime(2026, 12, 6, 9, 30, tzinfo=UTC)
TABLE = shipped_table().label


def project(*rows: tuple[str, float, float, float | None]) -> object:
    return prices_of(
        SimpleNamespace(model=m, input_per_million=i, output_per_million=o,
                        cached_input_per_million=c, cache_write_per_million=None, updated_at=AT)
        for m, i, o, c in rows
    )  # fmt: skip


def llm(model: str | None, tokens: tuple[int | None, int | None] = (1000, 200),
        **attributes: int) -> dict:  # fmt: skip
    return {"kind": "llm", "response_model": model, "input_tokens": tokens[0],
            "output_tokens": tokens[1], "attributes": attributes}  # fmt: skip


def test_cached_tokens_are_part_of_the_input_and_billed_at_the_cached_price() -> None:
    claude = Price(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)
    usage = Usage(input=10_000, output=1_000, cache_read=6_000, cache_write=2_000)
    # 2,000 uncached at 3, 6,000 read at 0.3, 2,000 written at 3.75, 1,000 out at 15
    assert call_cost(usage, claude) == pytest.approx((6_000 + 1_800 + 7_500 + 15_000) / 1e6)
    # a table without a cached price bills cached tokens as input
    assert call_cost(usage, Price(3.0, 15.0)) == pytest.approx((30_000 + 15_000) / 1e6)


def test_cache_counts_beyond_the_input_are_read_as_separate_from_it() -> None:
    # Anthropic's own fields: input_tokens excludes the cache reads
    usage = Usage(input=50, output=10, cache_read=4_000)
    assert call_cost(usage, Price(3.0, 15.0, 0.3)) == pytest.approx(
        (50 * 3.0 + 4_000 * 0.3 + 10 * 15.0) / 1e6
    )


@pytest.mark.parametrize(
    "attributes",
    [{"gen_ai.usage.cache_read.input_tokens": 400},  # OTel GenAI (openai-v2)
     {"gen_ai.usage.cache_read_input_tokens": 400},  # OpenLLMetry, OpenLIT
     {"llm.token_count.prompt_details.cache_read": 400}],  # OpenInference
)  # fmt: skip
def test_cached_tokens_are_read_under_every_conventions_name(attributes: dict) -> None:
    cost, source = price_call(llm("gpt-4o-2024-08-06", **attributes), project())
    assert source == TABLE
    assert cost == pytest.approx((600 * 2.5 + 400 * 1.25 + 200 * 10.0) / 1e6)


def test_a_project_price_wins_over_the_table_and_is_versioned_by_its_time() -> None:
    prices = project(("gpt-4o", 2.0, 8.0, None))
    cost, source = price_call(llm("openai/gpt-4o-2024-08-06"), prices)
    assert source == "project 2026-12-06T09:30Z"
    assert cost == pytest.approx((1000 * 2.0 + 200 * 8.0) / 1e6)
    assert price_call(llm("gpt-4o-mini"), prices)[1] == TABLE  # others: the table


def test_patterns_match_and_the_most_specific_wins() -> None:
    prices = project(("ft:gpt-4o-mini:*", 0.3, 1.2, None), ("ft:gpt-4o-mini:acme:*", 0.25, 1.0, None),
                     ("*", 9.0, 9.0, None), ("foo-7b", 0.1, 0.1, None))  # fmt: skip
    assert prices.find("ft:gpt-4o-mini:acme::x1").price.input == 0.25
    assert prices.find("ft:gpt-4o-mini:other::x1").price.input == 0.3
    assert prices.find("together/FOO-7B").matched == "foo-7b"
    # a pattern beats the table: "*" prices every model the project names no price for
    assert prices.find("gpt-4o").matched == "*"


@pytest.mark.parametrize(
    ("span", "reason"),
    [(llm(None), NO_MODEL), (llm("gpt-4o", (None, None)), NO_TOKENS), (llm("foo-7b"), NO_PRICE)],
)
def test_a_call_that_cannot_be_priced_says_why(span: dict, reason: str) -> None:
    assert price_call(span, project()) == (None, reason)


def test_the_request_model_prices_a_call_without_a_response_model() -> None:
    span = {**llm(None), "request_model": "gpt-4o-mini"}
    assert price_call(span, project())[1] == TABLE
