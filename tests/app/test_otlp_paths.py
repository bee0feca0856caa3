"""A missed OTLP path and a key without ``Bearer`` are answered with what to write instead."""

from __future__ import annotations

import pytest

from tests.conftest import sqlite_only


@sqlite_only
@pytest.mark.parametrize(
    ("path", "meant"),
    [("/v1/trace", "/v1/traces"), ("/traces", "/v1/traces"), ("/v1/traces/v1/traces", "/v1/traces"),
     ("/otlp/v1/logs", "/v1/logs"), ("/v1/metric", "/v1/metrics")],
)  # fmt: skip
def test_a_missed_otlp_path_names_the_one_that_exists(client, path, meant):
    r = client.post(path, content=b"", headers={"content-type": "application/x-protobuf"})
    assert r.status_code in (404, 405)
    assert f"POST {meant}" in r.json()["detail"]


@sqlite_only
def test_other_misses_stay_plain(client):
    assert client.post("/nowhere").json()["detail"] == "Not Found"
    assert client.get("/v1/trace").json()["detail"] == "Not Found"


@sqlite_only
def test_a_key_without_bearer_is_told_how_to_write_it(client, make_key):
    key = make_key("ingest")
    r = client.post("/v1/traces", content=b"", headers={
        "authorization": key, "content-type": "application/json"})  # fmt: skip
    assert r.status_code == 401
    assert "Authorization: Bearer <key>" in r.json()["message"]
    assert "not 'Bearer <key>'" in r.json()["message"]
    r = client.get("/api/v1/monitors", headers={"authorization": key})
    assert r.status_code == 401 and "not 'Bearer <key>'" in r.json()["detail"]
    missing = client.get("/api/v1/monitors")
    assert missing.json()["detail"].startswith("missing API key")
