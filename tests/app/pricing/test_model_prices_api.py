"""``/api/v1/project/model-prices``: a read key reads, an admin key replaces the set; a bad
price is a 422 naming its field; an unchanged price keeps its version."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import auth

PATH = "/api/v1/project/model-prices"
GPT = {"model": "GPT-4o", "input_per_million": 2.0, "output_per_million": 8.0,
       "cached_input_per_million": 1.0}  # fmt: skip
FOO = {"model": "foo-*", "input_per_million": 0.2, "output_per_million": 0.2}
BAR = {"model": "Acme/bar-13b", "input_per_million": 0.5, "output_per_million": 0.5}

sqlite_only = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)


def test_an_admin_sets_the_prices_and_an_unchanged_one_keeps_its_version(
    client: TestClient, make_key: Any
) -> None:
    admin, reader = make_key("admin"), make_key("read")
    first = client.put(PATH, headers=auth(admin), json={"prices": [GPT, FOO, BAR]})
    assert first.status_code == 200, first.text
    stored = {p["model"]: p for p in first.json()["prices"]}
    assert set(stored) == {"gpt-4o", "foo-*", "bar-13b"}  # names as the lookup reads them
    assert stored["gpt-4o"]["cached_input_per_million"] == 1.0
    assert stored["foo-*"]["cached_input_per_million"] is None

    changed = {**FOO, "output_per_million": 0.3}
    second = client.put(PATH, headers=auth(admin), json={"prices": [GPT, changed]}).json()
    again = {p["model"]: p for p in second["prices"]}
    assert again["gpt-4o"]["updated_at"] == stored["gpt-4o"]["updated_at"]
    assert again["foo-*"]["updated_at"] >= stored["foo-*"]["updated_at"]
    assert again["foo-*"]["output_per_million"] == 0.3

    read = client.get(PATH, headers=auth(reader), params={"model": "openai/gpt-4o-2024-11-20"})
    assert read.status_code == 200
    found = read.json()["found"]
    assert (found["matched"], found["by"], found["input_per_million"]) == ("gpt-4o", "project", 2.0)
    assert found["cost_source"].startswith("project ")
    assert client.get(PATH, headers=auth(reader), params={"model": "foo-7b"}).json()["found"][
        "matched"] == "foo-*"  # fmt: skip
    assert (
        client.get(PATH, headers=auth(reader), params={"model": "nope-1"}).json()["found"] is None
    )

    assert client.put(PATH, headers=auth(admin), json={"prices": []}).json()["prices"] == []
    assert client.put(PATH, headers=auth(reader), json={"prices": [GPT]}).status_code == 403


@sqlite_only
@pytest.mark.parametrize(
    ("prices", "field", "says"),
    [
        ([{**GPT, "input_per_million": -1}], "body.prices.0.input_per_million", "greater than or equal to 0"),
        ([{**GPT, "output_per_million": "lots"}], "body.prices.0.output_per_million", "valid number"),
        ([{**GPT, "cached_input_per_million": 1e9}], "body.prices.0.cached_input_per_million", "less than or equal"),
        ([{"model": "gpt-4o", "input_per_million": 1}], "body.prices.0.output_per_million", "Field required"),
        ([{**GPT, "model": "gpt 4o"}], "body.prices.0.model", "no spaces"),
        ([{**GPT, "model": ""}], "body.prices.0.model", "at least 1 character"),
        ([{**GPT, "model": "m" * 129}], "body.prices.0.model", "at most 128 characters"),
        ([GPT, FOO, {**GPT, "model": "gpt-4O"}], "body.prices", "[2].model: 'gpt-4o' is priced twice"),
    ],
)  # fmt: skip
def test_a_bad_price_is_refused_naming_its_field(
    client: TestClient, make_key: Any, prices: list[dict[str, Any]], field: str, says: str
) -> None:
    r = client.put(PATH, headers=auth(make_key("admin")), json={"prices": prices})
    assert r.status_code == 422, r.text
    fields = {e["field"]: e["error"] for e in r.json()["errors"]}
    assert field in fields and says in fields[field], fields


@sqlite_only
def test_a_model_to_look_up_is_bounded(client: TestClient, make_key: Any) -> None:
    r = client.get(PATH, headers=auth(make_key("read")), params={"model": "m" * 129})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "query.model"
