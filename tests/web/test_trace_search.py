"""Trace search on the page: time range, agent, version, status, text (bounded), trace id;
bad values get a 4xx page naming the field."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from tests.conftest import auth
from tests.web.test_pages import login

NOW = datetime.now(UTC).replace(microsecond=0)


def ids(page: str) -> list[str]:
    """The listed trace ids, sorted (the list is newest-ingested first)."""
    return sorted(re.findall(r'<td><a href="/traces/[^"]+">([^<]+)</a></td>', page))


def seed(client, key) -> None:
    rows = [  # id, agent, version, status, hours ago, input
        ("a1", "support", "1.0", "ok", 1, "Where is my parcel?"),
        ("a2", "support", "1.1", "error", 2, "Refund 100% please"),
        ("b1", "billing", "2.0", "ok", 3, "Invoice for March"),
        ("old", "support", "1.0", "ok", 50, "Where is my parcel, again?"),
    ]
    events = [
        {"id": tid, "type": "trace", "body": {"trace_id": tid, "agent": agent,
         "agent_version": version, "status": status,
         "started_at": (NOW - timedelta(hours=h)).isoformat(), "attributes": {"input": text}}}
        for tid, agent, version, status, h, text in rows
    ]  # fmt: skip
    r = client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
    assert r.status_code == 200 and r.json()["accepted"] == 4, r.text


def test_filters_narrow_the_list(client, make_key):
    key = make_key("admin")
    seed(client, key)
    login(client, make_key("read"))
    assert ids(client.get("/traces").text) == ["a1", "a2", "b1", "old"]
    assert ids(client.get("/traces?agent=support&version=1.0").text) == ["a1", "old"]
    assert ids(client.get("/traces?status=error").text) == ["a2"]
    since = (NOW - timedelta(hours=2, minutes=30)).strftime("%Y-%m-%dT%H:%M")
    until = (NOW - timedelta(minutes=90)).strftime("%Y-%m-%dT%H:%M")
    assert ids(client.get(f"/traces?since={since}&until={until}").text) == ["a2"]
    page = client.get("/traces?q=PARCEL").text  # case-insensitive, last 24 h by default
    assert ids(page) == ["a1"] and "the last 24 hours" in page
    since = (NOW - timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    assert ids(client.get(f"/traces?q=parcel&since={since}").text) == ["a1", "old"]
    assert ids(client.get("/traces?q=100%25").text) == ["a2"]  # % is literal
    assert ids(client.get("/traces?q=_").text) == []  # _ is literal
    assert ids(client.get("/traces?trace_id=b1").text) == ["b1"]
    page = client.get("/traces?agent=support&limit=1").text
    assert 'value="support"' in page  # the form keeps the filters


def test_the_list_shows_duration_tokens_and_cost(client, make_key):
    key = make_key("admin")
    start = NOW - timedelta(minutes=5)
    spans = [  # an LLM call with input/output tokens and a cost, one with a total only
        {"span_id": "s1", "kind": "llm", "name": "chat", "input_tokens": 1200,
         "output_tokens": 34, "cost": 0.0125},
        {"span_id": "s2", "kind": "llm", "name": "chat", "total_tokens": 500, "cost": 0.002},
        {"span_id": "s3", "kind": "tool", "name": "lookup", "tool_name": "lookup"},
    ]  # fmt: skip
    events = [{"id": "t", "type": "trace", "body": {
        "trace_id": "costly", "agent": "a", "started_at": start.isoformat(),
        "ended_at": (start + timedelta(seconds=3.5)).isoformat()}}]  # fmt: skip
    events += [{"id": s["span_id"], "type": "span", "body": {"trace_id": "costly", **s}}
               for s in spans]  # fmt: skip
    events.append({"id": "t2", "type": "trace", "body": {"trace_id": "plain", "agent": "a",
                   "started_at": start.isoformat()}})  # fmt: skip
    r = client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
    assert r.status_code == 200 and r.json()["accepted"] == 5, r.text
    login(client, make_key("read"))
    page = client.get("/traces").text
    row = re.search(r'<a href="/traces/costly">.*?</tr>', page, re.S)
    assert row is not None
    cells = re.findall(r'<td class="num">([^<]*)</td>', row.group(0))
    assert cells == ["3.50 s", "1,734", "$0.0145"], cells
    plain = re.search(r'<a href="/traces/plain">.*?</tr>', page, re.S)
    assert plain is not None
    assert re.findall(r'<td class="num">([^<]*)</td>', plain.group(0)) == ["", "", ""]


def test_bad_filters_get_a_page_naming_the_field(client, make_key):
    login(client, make_key("read"))
    html = {"accept": "text/html"}
    for query, field in [("since=yesterday", "since"), ("until=2026-13-01T00:00", "until"),
                         ("status=broken", "status"), ("q=" + "x" * 201, "q"),
                         ("cursor=abc", "cursor"), ("since=0001-01-01T00:00:00%2B01:00", "since")]:  # fmt: skip
        r = client.get(f"/traces?{query}", headers=html)
        assert 400 <= r.status_code < 500 and field in r.text, (query, r.status_code, r.text[:300])
        assert "<h1>" in r.text  # a page, not JSON
