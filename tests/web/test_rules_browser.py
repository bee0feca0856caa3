"""Alert rules in Chromium with JavaScript off, at desktop and phone width: an admin writes
a rule, previews it on the project's history, reads when it would have fired, fixes a
refused level and saves it; the rule is listed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine

from app.db import make_engine
from app.main import create_app
from app.models.base import utcnow
from app.settings import Settings
from tests.app.rollups.traffic import settle, trace
from tests.conftest import LiveServer, auth, fresh_database, key_for
from tests.web.test_browser import SHOTS, browser, login  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser


@pytest.fixture
def shop(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    """Four hours of a shop agent's traffic whose errors rose for half an hour."""
    url = fresh_database("sqlite", tmp_path, request)
    admin = key_for(url, "admin", "shop")
    settings = Settings(database_url=url, scheduler_enabled=False, media_dir=str(tmp_path / "m"))
    start = utcnow().replace(second=0, microsecond=0) - timedelta(hours=4)
    events = []
    for m in range(0, 225, 1):
        for k in range(2):
            failed = 120 <= m < 150 and k == 0
            events += trace(f"t{m}-{k}", at=start + timedelta(minutes=m, seconds=20 * k),
                            status="error" if failed else "ok")  # fmt: skip
    with (
        LiveServer(create_app(settings, start_background=False)) as server,
        httpx.Client(base_url=server.url, timeout=60, headers=auth(admin)) as c,
    ):
        r = c.post("/api/v1/ingest", json={"events": events})
        assert r.status_code == 200, r.text
        engine: Engine = make_engine(url)
        settle(engine)
        engine.dispose()
        yield {"url": server.url, "admin": admin}


@pytest.mark.parametrize(("width", "height"), [(1280, 900), (390, 844)])
def test_an_admin_previews_and_saves_a_rule(shop, browser, width, height):  # noqa: F811
    context = browser.new_context(java_script_enabled=False,
                                  viewport={"width": width, "height": height})  # fmt: skip
    page = context.new_page()
    login(page, shop["url"], shop["admin"], "/settings/rules")
    assert "No rules yet" in page.locator("#no-rules").inner_text()
    page.get_by_label("Name", exact=True).fill("shop errors")
    page.get_by_label("Metric").select_option("trace_error_rate")
    page.get_by_label("Over the last", exact=True).select_option("900")
    page.get_by_label("Warning level").fill("0.5")
    page.get_by_label("Critical level").fill("0.2")  # below the warning: refused
    page.get_by_label("For at least").select_option("300")
    page.get_by_label("Preview over the last (days, up to 30)").fill("1")
    page.get_by_role("button", name="Preview").press("Enter")
    page.locator("#form-error").wait_for()
    assert "rule.condition.static.critical: Value error, must be at or above the warning level (0.5)" in (
        page.locator("#form-error").inner_text())  # fmt: skip
    assert page.get_by_label("Critical level").input_value() == "0.2"  # what was typed is kept
    page.get_by_label("Warning level").fill("0.1")
    page.get_by_label("Critical level").fill("0.3")
    page.get_by_role("button", name="Preview").press("Enter")
    page.locator("#rule-preview").wait_for()
    summary = page.locator("#preview-summary").inner_text()
    assert summary.startswith("Would have opened 1 alert, 1 critical."), summary
    assert "Nothing is saved yet" in page.locator("#flash").inner_text()
    chart = page.locator("#preview-chart svg.rule-chart")
    assert chart.locator("rect.episode.critical").count() == 1
    assert (
        chart.locator("line.level.warning").count() == 1
        and chart.locator("line.level.critical").count() == 1
    )
    assert chart.bounding_box()["width"] <= width
    rows = page.locator("#preview-episodes tbody tr")
    assert rows.count() == 1
    cells = rows.first.locator("td").all_inner_texts()
    assert cells[0] == "all traffic" and cells[3] == "critical" and cells[2] != "still open"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(SHOTS / f"rules-preview-{width}.png"), full_page=True)
    page.get_by_role("button", name="Save rule").press("Enter")
    page.locator("#flash").wait_for()
    assert "Rule 'shop errors' saved; it runs every 5 min." == page.locator("#flash").inner_text()
    row = page.locator("#rules tbody tr")
    assert row.count() == 1
    texts = row.first.locator("td").all_inner_texts()
    assert texts[:4] == ["shop errors", "trace error rate", "all traffic", "—"]
    assert texts[4] == "above warning 0.1, critical 0.3 for 5 min"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(SHOTS / f"rules-saved-{width}.png"), full_page=True)
    context.close()
