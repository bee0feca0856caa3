"""The issues pages in Chromium, JavaScript off, at a desk's width and a phone's: what
on-call reads the next morning (the list by impact, one issue's chart, versions, examples
and history) and resolving one with a note by keyboard. Screenshots under SHOTS_ISSUES."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.db import make_engine
from app.main import create_app
from app.settings import Settings
from tests.app.derive.test_derive_job import derive
from tests.app.issues.test_api import traffic
from tests.app.issues.traffic import send
from tests.conftest import LiveServer, fresh_database, key_for
from tests.web.test_browser import SHOTS, browser, login  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser
SHOTS_ISSUES = Path("/tmp/shots-issues")


@pytest.fixture
def failing_project(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    url = fresh_database("sqlite", tmp_path, request)
    keys = {role: key_for(url, role, "airline") for role in ("ingest", "read", "annotate")}
    settings = Settings(database_url=url, scheduler_enabled=False, media_dir=str(tmp_path / "m"))
    app = create_app(settings, start_background=False)
    with TestClient(app) as client:
        send(client, keys["ingest"], traffic())
    engine = make_engine(url)
    derive(engine)
    engine.dispose()
    with LiveServer(create_app(settings, start_background=False)) as server:
        yield {"url": server.url, **keys}


@pytest.mark.parametrize("width", [1280, 390])
def test_on_call_reads_the_issues_and_resolves_one(failing_project, browser, width):  # noqa: F811
    SHOTS_ISSUES.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": width, "height": 900}
    )
    page = context.new_page()
    login(page, failing_project["url"], failing_project["annotate"], "/issues")
    rows = page.locator("tr.issue-row")
    assert rows.count() == 2
    first = rows.nth(0).inner_text()
    assert "Error: reservation <ID> not found" in first and "3 events in 3 traces" in first
    assert "resolved" in rows.nth(1).inner_text()  # cancel: quiet for 30 hours
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(SHOTS_ISSUES / f"issues-{width}.png"), full_page=True)

    page.get_by_role("link", name="Error: reservation <ID> not found").click()
    summary = page.locator(".issue-summary").inner_text()
    assert "ToolError in tool get_reservation of agent support: 3 events in 3 traces" in summary
    assert "75% of the agent's traces in the last 24 hours" in summary
    assert page.locator("svg.issue-chart rect.bar").count() == 3
    versions = page.locator("#issue-versions tbody").inner_text()
    assert "v2" in versions and "v1" in versions
    assert "Error: reservation Q1W2E3 not found" in page.locator("#issue-examples").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(SHOTS_ISSUES / f"issue-{width}.png"), full_page=True)

    page.get_by_label("Note").fill("fixed by the v3 lookup")
    page.get_by_label("Note").press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Resolve"
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.locator("#issue-state").inner_text() == "resolved"
    history = page.locator("#issue-history").inner_text()
    assert "new" in history and "fixed by the v3 lookup" in history
    page.goto(f"{failing_project['url']}/traces/c")
    assert "Error: reservation <ID> not found" in page.locator("#trace-issues").inner_text()
    page.screenshot(path=str(SHOTS_ISSUES / f"trace-{width}.png"), full_page=True)
    context.close()
