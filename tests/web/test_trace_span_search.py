"""Text search finds what OTLP traces keep in their spans (GenAI message attributes, tool
results) and span events, on SQLite and PostgreSQL, and reads a bounded number of traces
a page, going on from where it stopped."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from app.db import write_session
from app.models import Project, SpanEvent
from app.traces import search
from tests.conftest import auth
from tests.web.test_pages import login
from tests.web.test_trace_search import ids

NOW = datetime.now(UTC).replace(microsecond=0)


def seed(client, key, engine) -> None:
    """Five traces, newest last: ``chat`` keeps the user's words in a span's
    ``gen_ai.input.messages``, ``tool`` in a tool result, ``event`` in a span event's body;
    ``json`` in its own input; ``plain`` nowhere."""
    messages = [{"role": "user", "parts": [{"type": "text", "content": "My Lufthansa booking"}]}]
    spans = {
        "chat": {"kind": "llm", "name": "chat gpt-4o",
                 "attributes": {"gen_ai.input.messages": json.dumps(messages)}},
        "tool": {"kind": "tool", "name": "get_reservation", "tool_name": "get_reservation",
                 "attributes": {"gen_ai.tool.call.result": '{"carrier": "KLM", "seat": "12C"}'}},
        "event": {"kind": "llm", "name": "chat"},
        "json": {"kind": "llm", "name": "chat"},
        "plain": {"kind": "llm", "name": "chat"},
    }  # fmt: skip
    events = []
    for i, (tid, span) in enumerate(spans.items()):
        at = NOW - timedelta(minutes=50 - i)
        attrs = {"input": "Where is my Lufthansa bag?"} if tid == "json" else {}
        events.append({"id": f"t-{tid}", "type": "trace", "body": {
            "trace_id": tid, "agent": "a", "started_at": at.isoformat(), "attributes": attrs}})  # fmt: skip
        events.append({"id": f"s-{tid}", "type": "span", "body": {
            "trace_id": tid, "span_id": "s1", "started_at": at.isoformat(), **span}})  # fmt: skip
    r = client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
    assert r.status_code == 200 and not r.json()["rejected"], r.text
    with write_session(engine) as s:
        pid = s.scalar(select(Project.id).where(Project.name == "p1"))
        s.add(SpanEvent(
            project_id=pid, trace_id="event", span_id="s1", name="gen_ai.user.message",
            time=NOW - timedelta(minutes=48), attributes={"gen_ai.system": "openai"},
            body={"content": "Please refund the FERRY ticket"},
        ))  # fmt: skip


def test_text_is_found_in_span_attributes_and_span_events(client, make_key, engine):
    seed(client, make_key("admin"), engine)
    login(client, make_key("read"))
    assert ids(client.get("/traces?q=lufthansa").text) == ["chat", "json"]
    assert ids(client.get("/traces?q=12c").text) == ["tool"]  # in a tool result
    assert ids(client.get("/traces?q=ferry").text) == ["event"]
    assert ids(client.get("/traces?q=get_reservation").text) == ["tool"]  # the span's name
    assert ids(client.get("/traces?q=no+such+words").text) == []
    page = client.get("/traces?q=lufthansa").text
    assert "span content" in page and 'id="scan-bound"' not in page  # all 5 read at once


def test_each_page_reads_a_bounded_number_of_traces(client, make_key, engine, monkeypatch):
    seed(client, make_key("admin"), engine)
    login(client, make_key("read"))
    monkeypatch.setattr(search, "SCAN_TRACES", 2)
    # Newest first: plain, json | event, tool | chat. "lufthansa" is in json and chat.
    found, url, pages = [], "/traces?q=lufthansa", 0
    while url and pages < 5:
        page = client.get(url).text
        pages += 1
        found += ids(page)
        more = re.search(r'<a href="(/traces\?[^"]*cursor=\d+)">([^<]*)</a>', page)
        url = more.group(1).replace("&amp;", "&") if more else None
        if more:
            assert more.group(2) == "Search older traces →"
            bound = re.search(r'<p class="muted small" id="scan-bound">([^<]*)</p>', page)
            assert bound and bound.group(1).startswith("This page searched the newest 2 traces")
    assert sorted(found) == ["chat", "json"] and pages == 3
