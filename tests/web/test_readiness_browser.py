"""The readiness panel in a real browser (Debian chromium, headless, Playwright).

A project sends what plain ``openai-v2`` spans without content give (one LLM step per
trace): the overview's FM-3 card lists the missing input identity with the setting that
fills it; after the content-derived signals arrive the panel says the data is ready, and
the monitor page's table shows each need present.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.main import create_app
from app.settings import Settings
from tests.conftest import LiveServer, auth, fresh_database, key_for
from tests.web.test_browser import SHOTS, browser, login  # noqa: F401 (the browser fixture)

pytestmark = pytest.mark.browser


@pytest.fixture
def project(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    url = fresh_database("postgresql", tmp_path, request)
    admin = key_for(url, "admin", "support")
    settings = Settings(database_url=url, scheduler_enabled=False, media_dir=str(tmp_path / "m"))
    start = datetime.now(UTC) - timedelta(minutes=100)
    events: list[dict[str, Any]] = []
    for i in range(60):
        t, tid = start + timedelta(seconds=90 * i), f"t{i:03d}"
        end = (t + timedelta(seconds=2)).isoformat()
        events += [
            {"id": f"tr-{tid}", "type": "trace", "body": {
                "trace_id": tid, "agent": "support", "started_at": t.isoformat(), "ended_at": end,
                # as the OTLP receiver stores a trace: remedies then speak OTel
                "attributes": {"otel.agent_key": "support"}}},
            {"id": f"sp-{tid}", "type": "span", "body": {
                "trace_id": tid, "span_id": "s1", "kind": "llm", "name": "chat gpt-4o",
                "started_at": t.isoformat(), "ended_at": end}},
        ]  # fmt: skip
    with (
        LiveServer(create_app(settings, start_background=False)) as server,
        httpx.Client(base_url=server.url, timeout=60, headers=auth(admin)) as c,
    ):
        assert c.post("/api/v1/ingest", json={"events": events}).status_code == 200
        monitors = c.post("/api/v1/monitors/defaults", json={}).json()["monitors"]
        fm3 = next(m for m in monitors if m["failure_mode"] == "FM-3")
        yield {"url": server.url, "admin": admin, "client": c, "fm3": fm3}


def content_arrives(c: httpx.Client) -> None:
    """What content capture and the derived signals add: repeated input identities, a
    decision, an entry point and output vectors per trace."""
    events = [
        {"id": f"tr2-t{i:03d}", "type": "trace", "body": {
            "trace_id": f"t{i:03d}", "input_hash": f"q{i % 20}", "entry_point": "chat",
            "attributes": {"decision": "refund" if i % 3 else "escalate"}}}
        for i in range(60)
    ] + [
        {"id": f"emb-{i}", "type": "embedding", "body": {
            "stream": "support.output", "trace_id": f"t{i:03d}", "vector": [1.0, i / 60]}}
        for i in range(60)
    ]  # fmt: skip
    r = c.post("/api/v1/ingest", json={"events": events})
    assert r.status_code == 200 and r.json()["accepted"] == 120, r.text


def test_panel_lists_the_missing_need_with_its_remedy_then_shows_ready(project, browser):  # noqa: F811
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    login(page, project["url"], project["admin"], "/")
    card = page.locator("section.mode[data-mode=FM-3] .readiness")
    assert card.get_attribute("data-readiness") == "missing"
    need = card.locator("li.need[data-need=input_hash]")
    assert "0/60" in need.locator("summary").inner_text()
    need.locator("summary").click()  # opens the remedies
    remedies = need.locator("li.remedy")
    texts = [remedies.nth(i).inner_text() for i in range(remedies.count())]
    assert any("telltale.input_hash" in t for t in texts), texts
    assert any("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only" in t for t in texts)
    assert need.locator("li.remedy").first.is_visible()
    # FM-1 reads steps, which plain spans carry, but one step a trace cannot feed it: the
    # card says so instead of counting the steps present.
    fm1 = page.locator("section.mode[data-mode=FM-1] .readiness")
    assert fm1.get_attribute("data-readiness") == "missing"
    steps = fm1.locator("li.need[data-need=steps]")
    steps.locator("summary").click()
    assert "0 of 60 traces make three or more tool calls" in steps.inner_text()
    page.screenshot(path=str(SHOTS / "readiness-missing.png"), full_page=True)

    content_arrives(project["client"])
    page.goto(f"{project['url']}/")
    card = page.locator("section.mode[data-mode=FM-3] .readiness")
    assert card.get_attribute("data-readiness") == "ready"
    assert card.locator("li.need").count() == 0
    assert "data ready" in card.inner_text()
    # FM-7's diversity test runs on the decisions: the rest is optional, and said so.
    fm7 = page.locator("section.mode[data-mode=FM-7] .readiness")
    assert "ready, 3 optional missing" in fm7.locator(".badge").first.inner_text()
    assert fm7.locator("li.need .optional").count() == 3
    page.screenshot(path=str(SHOTS / "readiness-ready.png"), full_page=True)

    page.goto(f"{project['url']}/monitors/{project['fm3']['id']}")
    rows = page.locator("#readiness tr[data-need]")
    assert rows.count() == 4
    assert page.locator("#readiness tr[data-present=no]").count() == 0
    assert "60 / 60" in page.locator("#readiness tr[data-need=input_hash]").inner_text()
