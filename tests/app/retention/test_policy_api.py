"""GET/PUT /api/v1/project/retention: an admin reads and sets the project's retention."""

from __future__ import annotations

from typing import Any

from tests.conftest import auth

URL = "/api/v1/project/retention"


def test_default_then_override_then_back(client: Any, make_key: Any) -> None:
    admin = auth(make_key("admin"))
    assert client.get(URL, headers=admin).json() == {
        "retention_days": None,
        "default_days": 30,
        "effective_days": 30,
    }
    r = client.put(URL, json={"retention_days": 7}, headers=admin)
    assert r.status_code == 200, r.text
    assert r.json() == {"retention_days": 7, "default_days": 30, "effective_days": 7}
    assert client.get(URL, headers=admin).json()["effective_days"] == 7
    r = client.put(URL, json={"retention_days": None}, headers=admin)
    assert r.json()["effective_days"] == 30


def test_only_admins_and_only_sane_days(client: Any, make_key: Any) -> None:
    reader = auth(make_key("read"))
    assert client.get(URL, headers=reader).status_code == 403
    assert client.put(URL, json={"retention_days": 7}, headers=reader).status_code == 403
    admin = auth(make_key("admin"))
    for bad in (0, -1, 10**6, "a week"):
        assert client.put(URL, json={"retention_days": bad}, headers=admin).status_code == 422
    assert client.put(URL, json={}, headers=admin).status_code == 422


def test_each_project_has_its_own(client: Any, make_key: Any) -> None:
    one = auth(make_key("admin", project="one"))
    two = auth(make_key("admin", project="two"))
    client.put(URL, json={"retention_days": 3}, headers=one)
    assert client.get(URL, headers=two).json()["retention_days"] is None
