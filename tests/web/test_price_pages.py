"""Settings · Model prices and the trace page's costs, without a browser: admin only, CSRF,
the API's model behind the form (a bad price is a 422 naming the field, what was typed
kept), calls left without a cost named with what to do."""

from __future__ import annotations

import html
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from app.db import write_session
from app.models import ModelPrice
from app.pricing.table import shipped_table
from tests.app.pricing.test_derive_costs import call
from tests.app.rollups.traffic import ingest, settle
from tests.web.test_pages import login
from tests.web.test_settings_pages import HTML, csrf, post

sqlite_only = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)


def row(model: str = "", i: str = "", o: str = "", cached: str = "", write: str = "") -> dict:
    return {"model": model, "input_per_million": i, "output_per_million": o,
            "cached_input_per_million": cached, "cache_write_per_million": write}  # fmt: skip


def form(*rows: dict) -> dict[str, list[str]]:
    return {k: [r[k] for r in rows] for k in row()}


@sqlite_only
@pytest.mark.parametrize("role", ["read", "annotate"])
def test_model_prices_are_for_admins(client: TestClient, make_key: Any, engine: Engine,
                                     role: str) -> None:  # fmt: skip
    login(client, make_key(role))
    token = csrf(client.get("/").text)
    r = client.get("/settings/prices", headers=HTML)
    assert r.status_code == 403 and "admin role" in r.text
    r = post(client, "/settings/prices", form(row("foo-7b", "1", "2")), token)
    assert r.status_code == 403
    with write_session(engine) as s:
        assert s.scalar(select(ModelPrice)) is None


@sqlite_only
def test_an_admin_prices_an_unknown_model_from_the_report(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    ingest(client, make_key("ingest"), call("a", "x", model="foo-7b") + call("b", "y"))
    settle(engine)
    login(client, make_key("admin"))
    page = client.get("/settings/prices", headers=HTML).text
    assert "Cost unknown for 50% of model calls in the last 7 days (1 of 2): model foo-7b" in page
    assert f'<strong id="table-version">{shipped_table().version}</strong>' in page
    assert 'href="/settings/prices?add=foo-7b#price-form"' in page
    prefilled = client.get("/settings/prices?add=foo-7b", headers=HTML).text
    assert 'name="model" value="foo-7b"' in prefilled

    token = csrf(page)
    assert post(client, "/settings/prices", form(row("foo-7b", "0.2", "0.4")), "x").status_code == 403
    bad = post(client, "/settings/prices", form(row("foo-7b", "0.2", "lots"), row()), token)
    assert bad.status_code == 422
    assert "prices.0.output_per_million: Input should be a valid number" in html.unescape(bad.text)
    assert 'value="lots"' in bad.text  # what was typed is kept
    twice = post(client, "/settings/prices", form(row("foo-7b", "1", "1"), row("FOO-7B", "1", "1")), token)
    assert twice.status_code == 422 and "is priced twice" in html.unescape(twice.text)

    done = post(client, "/settings/prices",
                form(row("foo-7b", "0.2", "0.4"), row("ft:gpt-4o-mini:*", "0.3", "1.2", "0.15"), row()),
                token)  # fmt: skip
    assert done.status_code == 200 and "Saved 2 model prices" in done.text
    with write_session(engine) as s:
        stored = {p.model: (p.input_per_million, p.cached_input_per_million)
                  for p in s.scalars(select(ModelPrice))}  # fmt: skip
    assert stored == {"foo-7b": (0.2, None), "ft:gpt-4o-mini:*": (0.3, 0.15)}
    looked = client.get("/settings/prices?model=FT:gpt-4o-mini:acme::x1", headers=HTML).text
    assert "is billed as <strong>ft:gpt-4o-mini:*</strong> (this project&#39;s price)" in looked
    missing = client.get("/settings/prices?model=bar-13b", headers=HTML).text
    assert "has no price: its calls stay without a cost" in missing

    emptied = post(client, "/settings/prices", form(row(), row("ft:gpt-4o-mini:*", "0.3", "1.2")), token)
    assert emptied.status_code == 200 and "Saved 1 model price." in emptied.text


@sqlite_only
def test_the_trace_page_says_what_each_call_cost_and_why_one_has_no_cost(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key = make_key("ingest")
    ingest(client, key, call("a", "priced") + call("a", "sent", cost=0.25)[1:]
           + call("a", "unknown", model="foo-7b")[1:])  # fmt: skip
    login(client, make_key("read"))
    before = html.unescape(client.get("/traces/a", headers=HTML).text)
    assert "not priced yet: calls are priced when their trace settles" in before
    settle(engine)
    page = html.unescape(client.get("/traces/a", headers=HTML).text)
    assert f"computed with the price table of {shipped_table().version}" in page
    assert "cost unknown: model foo-7b has no price; set one in Settings · Model prices" in page
    assert "cost unknown for 1 of 3 LLM calls" in page
    # gpt-4o: 1000 in at $2.50, 200 out at $10 per million; and the cost sent
    assert '<span id="trace-cost">$0.2545</span>' in page
