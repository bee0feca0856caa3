"""A trace without message content says how to send it in the terms of how it arrived: a
native-API trace is told its span event's attributes, never an OTel variable."""

from __future__ import annotations

from html import unescape

from tests.conftest import auth, sqlite_only
from tests.web.test_pages import login

T0, T1 = "2026-12-05T10:00:00+00:00", "2026-12-05T10:00:02+00:00"


def _trace(tid: str, attributes: dict) -> list[dict]:
    return [
        {"id": f"tr-{tid}", "type": "trace", "body": {
            "trace_id": tid, "agent": "a", "started_at": T0, "ended_at": T1,
            "attributes": attributes}},
        {"id": f"sp-{tid}", "type": "span", "body": {
            "trace_id": tid, "span_id": "s1", "kind": "llm", "name": "chat",
            "started_at": T0, "ended_at": T1}},
        {"id": f"sp2-{tid}", "type": "span", "body": {
            "trace_id": tid, "span_id": "s2", "kind": "tool", "tool_name": "search",
            "started_at": T0, "ended_at": T1}},
    ]  # fmt: skip


@sqlite_only
def test_the_no_content_note_speaks_the_traces_protocol(client, make_key):
    admin = make_key("admin")
    events = _trace("native1", {}) + _trace("otlp1", {"otel.agent_key": "a"})
    r = client.post("/api/v1/ingest", json={"events": events}, headers=auth(admin))
    assert r.status_code == 200 and not r.json()["rejected"], r.text
    login(client, admin)
    for path in ("/traces/native1", "/traces/native1/conversation"):
        page = unescape(client.get(path).text)
        assert "On POST /api/v1/ingest, an llm span event carries it" in page, path
        assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" not in page, path
    page = unescape(client.get("/traces/otlp1/conversation").text)
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only" in page
