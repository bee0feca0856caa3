"""The routes added for derived fields, scores, readiness, sessions and model prices, tried with a
key of each
role: only the roles the route names get past the key check (admin does everything,
annotate implies read)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import auth

ROLES = ("ingest", "read", "annotate", "admin")
# (method, path, body, roles allowed)
ROUTES: list[tuple[str, str, Any, set[str]]] = [
    ("POST", "/api/v1/scores", {"scores": [{"trace_id": "t1", "name": "csat", "value": 1}]},
     {"ingest", "admin"}),
    ("GET", "/api/v1/project/score-roles", None, {"admin"}),
    ("PUT", "/api/v1/project/score-roles", {"roles": {"csat": "proxy"}}, {"admin"}),
    ("GET", "/api/v1/project/derived-fields", None, {"admin"}),
    ("PUT", "/api/v1/project/derived-fields", {}, {"admin"}),
    ("DELETE", "/api/v1/project/derived-fields", None, {"admin"}),
    # The deprecated alias of the three above.
    ("GET", "/api/v1/project/signals", None, {"admin"}),
    ("PUT", "/api/v1/project/signals", {}, {"admin"}),
    ("DELETE", "/api/v1/project/signals", None, {"admin"}),
    ("GET", "/api/v1/monitors/{fm1}/readiness", None, {"read", "annotate", "admin"}),
    ("GET", "/api/v1/sessions", None, {"read", "annotate", "admin"}),
    ("GET", "/api/v1/issues", None, {"read", "annotate", "admin"}),
    ("GET", "/api/v1/project/model-prices", None, {"read", "annotate", "admin"}),
    ("PUT", "/api/v1/project/model-prices", {"prices": []}, {"admin"}),
    ("GET", "/api/v1/evaluators", None, {"read", "annotate", "admin"}),
    ("GET", "/api/v1/evaluators/{ev}", None, {"read", "annotate", "admin"}),
    ("PATCH", "/api/v1/evaluators/{ev}", {}, {"admin"}),
    ("GET", "/api/v1/evaluators/{ev}/evaluations", None, {"read", "annotate", "admin"}),
    ("GET", "/api/v1/evaluators/{ev}/agreement", None, {"read", "annotate", "admin"}),
    ("POST", "/api/v1/evaluators/{ev}/backfill",
     {"start": "2026-12-01T00:00:00Z", "end": "2026-12-02T00:00:00Z"}, {"admin"}),
]  # fmt: skip


@pytest.mark.parametrize("role", ROLES)
def test_each_new_route_admits_exactly_its_roles(client: Any, make_key: Any, role: str) -> None:
    admin = make_key(role="admin")
    made = client.post("/api/v1/monitors/defaults", headers=auth(admin), json={}).json()
    fm1 = next(m["id"] for m in made["monitors"] if m["failure_mode"] == "FM-1")
    ev = client.post("/api/v1/evaluators", headers=auth(admin), json={
        "name": "no-refusal", "kind": "check", "check": {"check": "refusal"}}).json()["id"]  # fmt: skip
    key = make_key(role=role)
    for method, path, body, allowed in ROUTES:
        r = client.request(method, path.format(fm1=fm1, ev=ev), headers=auth(key), json=body)
        if role in allowed:
            assert r.status_code == 200, (method, path, role, r.text)
        else:
            assert r.status_code == 403, (method, path, role, r.status_code, r.text)
    assert client.post("/api/v1/scores", json=ROUTES[0][2]).status_code == 401
    if role != "admin":  # creating and deleting an evaluator are admin's
        assert client.post("/api/v1/evaluators", headers=auth(key), json={}).status_code == 403
        assert client.delete(f"/api/v1/evaluators/{ev}", headers=auth(key)).status_code == 403
