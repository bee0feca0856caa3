"""Ids and times out of the columns' range: a 422 naming the parameter, never a 500 or 503.

Integer primary keys are int4 on PostgreSQL (monitors, channels, keys, silences) or int8
(alerts, findings, queue items); SQLite holds 64 bits. Times must stay inside
``datetime``'s years once converted to UTC.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import auth, sqlite_only
from tests.web.test_pages import login

HUGE = "99999999999999999999"  # past 64 bits
INT4_PAST = "2147483648"  # past int4, fine for int8
EARLY = "0001-01-01T00:00:00+01:00"  # year 0 in UTC
LATE = "9999-12-31T23:30:00-01:00"  # year 10000 in UTC

# (method, url, parameter, int4 column?)
ID_ROUTES = [
    ("GET", "/api/v1/monitors/{}", "monitor_id", True),
    ("PATCH", "/api/v1/monitors/{}", "monitor_id", True),
    ("DELETE", "/api/v1/monitors/{}", "monitor_id", True),
    ("POST", "/api/v1/monitors/{}/run", "monitor_id", True),
    ("GET", "/api/v1/monitors/{}/runs", "monitor_id", True),
    ("GET", "/api/v1/alerts/{}", "alert_id", False),
    ("POST", "/api/v1/alerts/{}/ack", "alert_id", False),
    ("POST", "/api/v1/alerts/{}/resolve", "alert_id", False),
    ("DELETE", "/api/v1/channels/{}", "channel_id", True),
    ("DELETE", "/api/v1/keys/{}", "key_id", True),
    ("DELETE", "/api/v1/silences/{}", "silence_id", True),
    ("POST", "/api/v1/queue-items/{}/label", "item_id", False),
    ("POST", "/api/v1/queue-items/{}/skip", "item_id", False),
    ("POST", "/api/v1/queue-items/{}/release", "item_id", False),
    ("GET", "/api/v1/media/{}", "job_id", False),
    ("GET", "/api/v1/alerts?monitor_id={}", "monitor_id", True),
    ("GET", "/api/v1/findings?monitor_id={}", "monitor_id", True),
    ("GET", "/api/v1/findings?cursor={}", "cursor", False),
    ("GET", "/api/v1/traces?cursor={}", "cursor", False),
]


def _call(client: Any, key: str, method: str, url: str) -> Any:
    body = {"lease_token": "x", "label": "ok"} if method == "POST" else None
    if method == "PATCH":
        body = {"name": "n"}
    return client.request(method, url, json=body, headers=auth(key))


@sqlite_only
@pytest.mark.parametrize(("method", "url", "name", "_int4"), ID_ROUTES)
def test_id_past_64_bits_is_a_422_naming_it(client, make_key, method, url, name, _int4):
    r = _call(client, make_key("admin"), method, url.format(HUGE))
    assert r.status_code == 422, r.text
    assert any(e["field"].endswith(f".{name}") for e in r.json()["errors"]), r.text


@pytest.mark.parametrize(
    ("method", "url", "name"), [(m, u, n) for m, u, n, int4 in ID_ROUTES if int4]
)
def test_int4_ids_past_their_column_are_a_422_not_503(client, make_key, method, url, name):
    r = _call(client, make_key("admin"), method, url.format(INT4_PAST))
    assert r.status_code == 422, r.text
    assert any(e["field"].endswith(f".{name}") for e in r.json()["errors"]), r.text


def test_int8_ids_inside_their_column_are_a_plain_404(client, make_key):
    key = make_key("admin")
    assert client.get(f"/api/v1/alerts/{INT4_PAST}", headers=auth(key)).status_code == 404
    assert client.get("/api/v1/alerts/0", headers=auth(key)).status_code == 422


@sqlite_only
@pytest.mark.parametrize("when", [EARLY, LATE])
@pytest.mark.parametrize("url", ["/api/v1/traces", "/api/v1/findings", "/api/v1/monitors/1/runs"])
def test_times_that_overflow_in_utc_are_a_422(client, make_key, url, when):
    key = make_key("admin")
    for param in ("since", "until"):
        r = client.get(url, params={param: when}, headers=auth(key))
        assert r.status_code == 422, r.text
        assert f"query.{param}" in r.json()["detail"]


def test_naive_query_times_are_utc(client, make_key):
    r = client.get("/api/v1/traces?since=2026-01-01T00:00:00", headers=auth(make_key("read")))
    assert r.status_code == 200


def test_run_now_and_frozen_reference_times_are_checked(client, make_key):
    key = make_key("admin")
    r = client.post("/api/v1/monitors/defaults", headers=auth(key))
    monitor_id = r.json()["monitors"][0]["id"]
    r = client.post(f"/api/v1/monitors/{monitor_id}/run", json={"now": EARLY}, headers=auth(key))
    assert r.status_code == 422 and "now" in r.text, r.text


@sqlite_only
def test_silence_times_that_overflow_are_a_422(client, make_key):
    body = {"matchers": [{"name": "severity", "value": "critical"}], "ends_at": LATE}
    r = client.post("/api/v1/silences", json=body, headers=auth(make_key("annotate")))
    assert r.status_code == 422 and "ends_at" in r.text, r.text


@sqlite_only
def test_web_pages_bound_their_ids(client, make_key):
    login(client, make_key("read"))
    for url in (f"/monitors/{HUGE}", f"/monitors/{INT4_PAST}", f"/alerts/{HUGE}"):
        assert client.get(url).status_code == 422, url
    assert client.get("/traces", params={"since": EARLY}).status_code == 422
    assert client.get(f"/traces?cursor={HUGE}").status_code == 422


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/api/v1/traces/a%00b", "path"),
        ("/api/v1/traces?agent=a%00b", "query.agent"),
        ("/api/v1/queues/a%00b", "path"),
        ("/api/v1/media/a%00b/image", "path"),
    ],
)
def test_nul_in_a_path_or_query_string_is_a_422_naming_it(client, make_key, url, field):
    r = client.get(url, headers=auth(make_key("admin")))
    assert r.status_code == 422, r.text
    assert r.json()["errors"] == [{"field": field, "error": "contains a NUL character (U+0000)"}]
