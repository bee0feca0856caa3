"""The trace page in Chromium: an OTel GenAI agent run (content in log events) reads as a
chat with its tool calls; long content folds and nothing overflows; keyboard opens folds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.main import create_app
from app.settings import Settings
from tests.app.derive.otlp_agent import agent_run, send
from tests.conftest import LiveServer, fresh_database, key_for
from tests.web.test_browser import SHOTS, browser, login  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser


@pytest.fixture
def otel_trace(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    url = fresh_database("sqlite", tmp_path, request)
    admin = key_for(url, "admin", "shop")
    settings = Settings(database_url=url, scheduler_enabled=False, media_dir=str(tmp_path / "m"))
    long_answer = "Your order 42 left the warehouse this morning. " * 40 + "x" * 400
    run = agent_run(
        "Where is my order 42? " + "Please check tracking_number_" * 8,
        tools=("lookup_order", "track_parcel"), answer=long_answer, capture="event_only",
    )  # fmt: skip
    with LiveServer(create_app(settings, start_background=False)) as server:
        with httpx.Client(base_url=server.url, timeout=60) as c:
            send(c, admin, [run])  # type: ignore[arg-type]
        yield {"url": server.url, "admin": admin, "trace_id": run.trace_id}


def test_the_trace_reads_as_a_conversation(otel_trace, browser):  # noqa: F811
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    login(page, otel_trace["url"], otel_trace["admin"], f"/traces/{otel_trace['trace_id']}")
    roles = page.locator("#conversation li.msg").evaluate_all("els => els.map(e => e.dataset.role)")
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant"], roles
    asked = page.locator("#conversation li.msg[data-role=assistant]").first.inner_text()
    assert "requested tool" in asked and "lookup_order" in asked and "track_parcel" in asked
    final = page.locator("#conversation li.msg[data-role=assistant]").last
    assert "Your order 42 left the warehouse" in final.inner_text()
    assert not final.locator("details.more .content").is_visible()
    final.locator("details.more > summary").focus()
    page.keyboard.press("Enter")
    assert final.locator("details.more .content").is_visible()
    steps = page.locator("#detector-steps tbody tr").all_inner_texts()
    assert [s.split("\t")[1:3] for s in steps] == [
        ["llm", "chat gpt-4o-mini"], ["tool", "lookup_order"], ["tool", "track_parcel"],
        ["llm", "chat gpt-4o-mini"],
    ], steps  # fmt: skip
    assert page.locator("#waterfall li.step.wf svg rect").count() == 3
    assert page.evaluate("document.documentElement.scrollWidth") <= 1100
    page.screenshot(path=str(SHOTS / "trace-chat.png"), full_page=True)
    narrow = browser.new_page(viewport={"width": 420, "height": 900})
    login(narrow, otel_trace["url"], otel_trace["admin"], f"/traces/{otel_trace['trace_id']}")
    assert narrow.evaluate("document.documentElement.scrollWidth") <= 420 + 1
    narrow.screenshot(path=str(SHOTS / "trace-chat-narrow.png"), full_page=True)


def test_a_trace_without_content_fits_a_phone(otel_trace, browser):  # noqa: F811
    """The notice that no message content was captured names a long variable: it wraps
    at 390 px instead of widening the page (it made it 479 px wide)."""
    from datetime import UTC, datetime

    at = datetime.now(UTC).isoformat()
    events = [
        {"id": "bare", "type": "trace", "body": {"trace_id": "bare", "agent": "shop",
                                                  "started_at": at, "ended_at": at}},
        {"id": "bare-s", "type": "span", "body": {"trace_id": "bare", "span_id": "s1",
                                                   "kind": "tool", "name": "lookup_order",
                                                   "tool_name": "lookup_order",
                                                   "started_at": at, "ended_at": at}},
    ]  # fmt: skip
    with httpx.Client(base_url=otel_trace["url"], timeout=60) as c:
        r = c.post("/api/v1/ingest", json={"events": events},
                   headers={"Authorization": f"Bearer {otel_trace['admin']}"})  # fmt: skip
        assert r.status_code == 200 and not r.json()["rejected"], r.text
    phone = browser.new_page(viewport={"width": 390, "height": 844})
    login(phone, otel_trace["url"], otel_trace["admin"], "/traces/bare")
    # A native-API trace is told the native fields (#54 item 4), in a long line too.
    assert "No message content was sent" in phone.locator(".no-messages").first.inner_text()
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390 + 1
    phone.screenshot(path=str(SHOTS / "trace-no-content-390.png"), full_page=True)
