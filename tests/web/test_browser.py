"""The UI in a real browser (Debian chromium, headless, driven by Playwright).

One scenario, as on-call and an annotator would live it: an injected tool-failure cascade
raises an alert; on-call logs in, sees it firing and acknowledges it; the monitor page
charts the statistic; an annotator labels three items with the keyboard. Screenshots go
to artifacts/screenshots/.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect
from sqlalchemy import create_engine, func, select

from app.db import normalise_url
from app.main import create_app
from app.models import Alert, Label
from app.settings import Settings
from pipelines.scenarios import Injection, generate_workload
from tests.conftest import LiveServer, auth, fresh_database, key_for

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
START = datetime(2026, 11, 1, tzinfo=UTC)

pytestmark = pytest.mark.browser


@pytest.fixture
def world(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    url = fresh_database("postgresql", tmp_path, request)
    admin = key_for(url, "admin", "shop")
    annotator = key_for(url, "annotate", "shop")
    settings = Settings(database_url=url, scheduler_enabled=False, media_dir=str(tmp_path / "m"))
    events = generate_workload(
        11,
        START,
        timedelta(hours=11),
        traces_per_hour=65,  # 11 h at 65/h: about the 8 h at 90/h this world was before
        embedding_dim=32,
        injections=[Injection("FM-2", START + timedelta(hours=9), "strong")],
    )
    with (
        LiveServer(create_app(settings, start_background=False)) as server,
        httpx.Client(base_url=server.url, timeout=120, headers=auth(admin)) as c,
    ):
        for i in range(0, len(events), 2000):
            r = c.post("/api/v1/ingest", json={"events": events[i : i + 2000]})
            assert r.status_code == 200, r.text
        monitors = c.post("/api/v1/monitors/defaults", json={}).json()["monitors"]
        fm2 = next(m for m in monitors if m["failure_mode"] == "FM-2")
        # No verdict before 8 h of data (a whole reference window); four verdicts, the
        # last two on the failure.
        for hours in (8, 9, 10, 11):
            now = (START + timedelta(hours=hours)).isoformat()
            r = c.post(f"/api/v1/monitors/{fm2['id']}/run", json={"now": now})
            assert r.status_code == 200, r.text
        assert r.json()["fired"], r.json()
        q = c.post(
            "/api/v1/queues",
            json={
                "name": "images",
                "selection": {"streams": ["vlm.image"]},
                "label_schema": {"type": "categorical", "values": ["ok", "drifted", "unclear"]},
                "budget_per_period": 10,
            },
        )
        assert q.status_code == 201, q.text
        assert c.post("/api/v1/queues/images/fill").json()["added"] >= 3
        q = c.post(
            "/api/v1/queues",
            json={
                "name": "support",
                "description": "Did the agent resolve the customer's request? Judge the final answer.",
                "selection": {"streams": ["support-agent.input"]},
                "label_schema": {"type": "categorical", "values": ["resolved", "not_resolved"]},
                "budget_per_period": 10,
            },
        )
        assert q.status_code == 201, q.text
        assert c.post("/api/v1/queues/support/fill").json()["added"] >= 3
        yield {"url": server.url, "db": url, "admin": admin, "annotator": annotator, "fm2": fm2}


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--disable-sync",
            ],
        )
        yield b
        b.close()


def login(page, base: str, key: str, next_path: str = "/") -> None:
    page.goto(f"{base}{next_path}")
    assert "/login" in page.url
    page.fill("#api_key", key)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}{next_path}")


def db_scalar(url: str, stmt):
    eng = create_engine(normalise_url(url))
    try:
        with eng.connect() as conn:
            return conn.scalar(stmt)
    finally:
        eng.dispose()


def test_on_call_acknowledges_alert_and_sees_chart(world, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    login(page, world["url"], world["admin"], "/alerts?state=firing")
    row = page.locator("tr[data-state=firing]").filter(has_text="FM-2")
    assert row.count() == 1
    page.screenshot(path=str(SHOTS / "alerts-firing.png"), full_page=True)
    row.locator("button[data-action=ack]").click()
    page.locator("tr[data-state=acknowledged]").filter(has_text="FM-2").wait_for()
    page.screenshot(path=str(SHOTS / "alerts-acknowledged.png"), full_page=True)
    assert (
        db_scalar(world["db"], select(Alert.state).where(Alert.failure_mode == "FM-2"))
        == "acknowledged"
    )

    page.goto(f"{world['url']}/")
    assert page.locator("section.mode[data-mode=FM-2]").get_attribute("class").count("firing") == 1
    page.screenshot(path=str(SHOTS / "overview.png"), full_page=True)

    page.goto(f"{world['url']}/monitors/{world['fm2']['id']}")
    chart = page.locator("#chart svg.run-chart")  # drawn by the server, as the alert's
    assert chart.locator("circle.point").count() == 4
    assert chart.locator("circle.point.fired").count() >= 1
    assert chart.locator("polyline.threshold").count() == 1
    # The value axis reads at round numbers (here 2, 4, 6, ...), not the data's extremes.
    labels = chart.locator("text.tick").all_text_contents()
    assert len(labels) >= 3 and all(float(t) % 2 == 0 for t in labels), labels
    page.screenshot(path=str(SHOTS / "monitor.png"), full_page=True)

    # The alert page says what happened in one sentence and charts it around the alert.
    page.goto(f"{world['url']}/alerts?state=acknowledged")
    page.locator("tr[data-state=acknowledged]").filter(has_text="FM-2").locator("a").first.click()
    sentence = page.locator("#sentence").inner_text()
    assert "First seen 2026-11-01 10:00 UTC" in sentence and "traces." in sentence, sentence
    assert "statistic" not in sentence.lower().split(".")[0], sentence
    assert page.locator("#open-for").inner_text().startswith("open ")
    assert " · acknowledged " in page.locator("#open-for").inner_text()
    chart = page.locator("#chart-card svg.run-chart")
    assert chart.locator("circle.point").count() == 4
    assert chart.locator("circle.point.fired").count() >= 1
    assert chart.locator("polyline.threshold").count() == 1
    assert chart.locator("rect.reference").count() == 1 and chart.locator("line.onset").count() == 1
    assert not page.locator("pre.evidence").is_visible()  # raw JSON waits behind its toggle
    page.locator("details.raw > summary").focus()
    page.keyboard.press("Enter")
    assert page.locator("pre.evidence").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.screenshot(path=str(SHOTS / "alert.png"), full_page=True)
    example = page.locator("#examples a[href^='/traces/']").first
    trace_id = example.inner_text()
    example.click()
    page.wait_for_url(f"**/traces/{trace_id}")
    assert trace_id in page.locator("main").inner_text()


def test_the_alert_page_reads_with_javascript_off(world, browser):
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1024, "height": 800}
    )
    page = context.new_page()
    login(page, world["url"], world["admin"], "/alerts")
    page.locator("tr").filter(has_text="FM-2").locator("a").first.click()
    assert page.locator("#sentence").inner_text().strip()
    assert page.locator("#chart-card svg circle.point").count() == 4  # drawn by the server
    assert page.locator("#history tr.event").count() >= 2
    page.screenshot(path=str(SHOTS / "alert-no-js.png"), full_page=True)
    monitor = page.url
    page.goto(f"{world['url']}/monitors/{world['fm2']['id']}")  # its monitor's chart too
    assert page.locator("#chart svg circle.point").count() == 4
    page.goto(monitor)
    page.locator("button[data-action=ack]").click()  # a plain form without JavaScript
    page.locator("tr[data-state=acknowledged]").wait_for()
    assert " · acknowledged just now by key tt_" in page.locator("#open-for").inner_text()
    context.close()


def test_annotator_labels_three_items_with_the_keyboard(world, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    login(page, world["url"], world["annotator"], "/label/support")
    # An annotator sees no admin actions.
    assert page.locator("nav a[href='/label']").count() == 1
    assert page.locator("nav a[href='/settings/keys']").count() == 0
    assert "resolve the customer's request" in page.locator("#guidelines").inner_text()
    waiting = int(page.locator("#waiting").inner_text())
    seen: list[str] = []
    for _ in range(3):
        # Locator waits, not wait_for_function: the page's CSP forbids the eval it uses.
        page.locator("#item[data-item-id]:not([data-item-id=''])").wait_for()
        item = page.locator("#item").get_attribute("data-item-id")
        assert item and item not in seen
        seen.append(item)
        assert page.locator("#item").get_attribute("data-content") == "yes"
        assert page.locator("#item .reason").inner_text().startswith("Unlike anything labeled so far")
        assert page.locator("#item a[href^='/traces/']").count() == 1
        page.locator("#item .conversation :is(ol.chat, p.muted:not(.small))").wait_for()
        page.keyboard.press("1")
        page.locator(f"#item[data-item-id]:not([data-item-id='{item}'])").wait_for()
    expect(page.locator("#done")).to_have_text("3")
    expect(page.locator("#labeled-count")).to_have_text("3")
    expect(page.locator("#waiting")).to_have_text(str(waiting - 3))
    page.screenshot(path=str(SHOTS / "labeling.png"), full_page=True)
    assert db_scalar(world["db"], select(func.count()).select_from(Label)) == 3

    # u takes the last answer back: the item returns, the counts step back, and the
    # label is gone until it is answered again.
    expect(page.locator("#status")).to_contain_text("Press u to undo")
    page.keyboard.press("u")
    expect(page.locator("#item")).to_have_attribute("data-item-id", seen[-1])
    expect(page.locator("#status")).to_contain_text("label undone")
    expect(page.locator("#labeled-count")).to_have_text("2")
    expect(page.locator("#waiting")).to_have_text(str(waiting - 2))
    assert db_scalar(world["db"], select(func.count()).select_from(Label)) == 2
    page.keyboard.press("2")
    expect(page.locator("#labeled-count")).to_have_text("3")
    assert db_scalar(world["db"], select(func.count()).select_from(Label)) == 3

    page.goto(f"{world['url']}/alerts")
    assert page.locator("button[data-action=resolve]").count() >= 0  # page renders for annotators


def test_an_item_with_nothing_to_look_at_can_only_be_skipped(world, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    login(page, world["url"], world["annotator"], "/label/images")
    page.locator("#item[data-item-id]:not([data-item-id=''])").wait_for()
    item = page.locator("#item").get_attribute("data-item-id")
    assert page.locator("#item").get_attribute("data-content") == "no"
    assert "cannot be labeled" in page.locator("#item .no-content").inner_text()
    assert page.locator("#choices button.choice:disabled").count() == 3
    page.keyboard.press("1")  # ignored
    page.screenshot(path=str(SHOTS / "labeling-no-content.png"), full_page=True)
    assert page.locator("#item").get_attribute("data-item-id") == item
    page.keyboard.press("s")
    page.locator(f"#item[data-item-id]:not([data-item-id='{item}'])").wait_for()
    expect(page.locator("#skipped-count")).to_have_text("1")
    assert db_scalar(world["db"], select(func.count()).select_from(Label)) == 0


def test_login_rejects_a_bad_key_and_pages_need_a_session(world, browser):
    page = browser.new_page()
    page.goto(f"{world['url']}/traces")
    assert "/login" in page.url
    page.fill("#api_key", "tt_not_a_key")
    page.click("button[type=submit]")
    assert page.locator(".error").inner_text().startswith("That API key is not valid")
    r = httpx.get(f"{world['url']}/alerts", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login")


def test_every_page_runs_under_the_content_security_policy(world, browser):
    """The pages work with CSP on: no violation (inline script/style) and no console error."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on(
        "response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None
    )
    login(page, world["url"], world["admin"], "/")  # Chromium logs each CSP violation
    trace_id = httpx.get(f"{world['url']}/api/v1/traces", headers=auth(world["admin"])).json()[
        "traces"
    ][0]["trace_id"]
    alert_id = httpx.get(f"{world['url']}/api/v1/alerts", headers=auth(world["admin"])).json()[
        "alerts"
    ][0]["id"]
    paths = ["/", "/traces", f"/traces/{trace_id}", "/alerts", f"/alerts/{alert_id}",
             f"/monitors/{world['fm2']['id']}", "/label", "/label/images", "/label/support",
             "/settings/keys", "/settings/monitors", "/settings/silences", "/settings/scores",
             "/settings/retention"]  # fmt: skip
    for path in paths:
        response = page.goto(f"{world['url']}{path}")
        assert response is not None and response.status == 200, path
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
        assert response.headers["x-frame-options"] == "DENY"
        page.wait_for_load_state("networkidle")
    assert problems == [], problems
    # Indentation of the span tree survives without style attributes.
    spans = [{"id": f"nest-{i}", "type": "span", "body": {
        "trace_id": "nested", "span_id": f"n{i}", "parent_span_id": f"n{i - 1}" if i else None,
        "kind": "llm", "name": f"step {i}", "step_index": i}} for i in range(3)]  # fmt: skip
    r = httpx.post(f"{world['url']}/api/v1/ingest", json={"events": spans},
                   headers=auth(world["admin"]))  # fmt: skip
    assert r.status_code == 200 and r.json()["accepted"] == 3, r.text
    page.goto(f"{world['url']}/traces/nested")
    margins = page.eval_on_selector_all(
        "li.step .wf-name", "els => els.map(e => parseFloat(getComputedStyle(e).paddingLeft))"
    )
    assert margins[0] == 0 and 0 < margins[1] < margins[2], margins
