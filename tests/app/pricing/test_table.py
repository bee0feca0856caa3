"""The shipped price table: dated, sourced, covering the major providers' models, and found
by the names instrumentations report (snapshots, provider prefixes, case)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from app.pricing.table import TABLE_PATH, candidates, shipped_table

ROOT = Path(__file__).resolve().parents[3]


def test_the_table_is_dated_sourced_and_licensed() -> None:
    data = json.loads(TABLE_PATH.read_text())
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", data["version"])
    assert data["units"] == "USD per million tokens"
    assert all(d["package"] == "litellm" and d["licence"].startswith("MIT")
               for d in data["derived_from"])  # fmt: skip
    for name, e in data["models"].items():
        assert candidates(name)[0] == name, name  # stored as the lookup reads it
        assert e["source"].startswith("https://"), name
        assert 0 < e["input"] < 1000 and 0 < e["output"] < 1000, name
        for cached in ("cached_input", "cache_write"):
            assert e[cached] is None or 0 <= e[cached] < 1000, name


def test_the_table_ships_in_the_wheel() -> None:
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "pricing/prices.json" in package_data["package-data"]["app"]


@pytest.mark.parametrize(
    ("model", "entry", "price"),
    [
        ("gpt-4o", "gpt-4o", (2.5, 10.0, 1.25)),
        ("gpt-4o-2024-08-06", "gpt-4o", (2.5, 10.0, 1.25)),
        ("gpt-4o-2024-05-13", "gpt-4o-2024-05-13", (5.0, 15.0, None)),  # its own older price
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini", (0.15, 0.6, 0.075)),
        ("openai/GPT-4.1-mini", "gpt-4.1-mini", (0.4, 1.6, 0.1)),
        ("o3-2025-04-16", "o3", (2.0, 8.0, 0.5)),
        ("gpt-5-nano-2025-08-07", "gpt-5-nano", (0.05, 0.4, 0.005)),
        ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet", (3.0, 15.0, 0.3)),
        ("claude-3-7-sonnet-latest", "claude-3-7-sonnet", (3.0, 15.0, 0.3)),
        ("anthropic/claude-sonnet-4-20250514", "claude-sonnet-4", (3.0, 15.0, 0.3)),
        ("us.anthropic.claude-3-5-haiku-20241022-v1:0", "claude-3-5-haiku-20241022",
         (0.8, 4.0, 0.08)),
        ("claude-opus-4-1@20250805", "claude-opus-4-1", (15.0, 75.0, 1.5)),
        ("models/gemini-1.5-pro-002", "gemini-1.5-pro", (1.25, 5.0, None)),
        ("gemini-2.0-flash", "gemini-2.0-flash", (0.1, 0.4, 0.025)),
        ("gemini/gemini-2.5-pro", "gemini-2.5-pro", (1.25, 10.0, 0.125)),
        ("mistral/mistral-large-2411", "mistral-large-2411", (2.0, 6.0, None)),
    ],
)  # fmt: skip
def test_a_model_finds_its_price(model: str, entry: str, price: tuple) -> None:
    found = shipped_table().find(model)
    assert found is not None, model
    assert found.model == entry
    assert (found.price.input, found.price.output, found.price.cached_input) == price


def test_anthropic_prices_cache_writes() -> None:
    assert shipped_table().find("claude-sonnet-4-5").price.cache_write == 3.75


@pytest.mark.parametrize("model", ["foo-7b", "llama-3.1-70b-instruct", "", "gpt", "my-gpt-4o"])
def test_an_unknown_model_has_no_price(model: str) -> None:
    assert shipped_table().find(model) is None
