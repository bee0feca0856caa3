"""The sessions pages in Chromium with JavaScript off, at desktop and phone width: a reader
finds a user's session in the list, opens it and reads the conversation turn by turn, then
follows a turn to its trace; no page is wider than the screen, and axe-core finds no
serious violation on either page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from app.main import create_app
from app.settings import Settings
from tests.app.derive.otlp_agent import T0, kvs
from tests.app.sessions.turns import SEC, turns
from tests.conftest import LiveServer, fresh_database, key_for
from tests.web.test_accessibility import scan
from tests.web.test_browser import SHOTS, browser, login  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser
LONG = "order-" + "7" * 70  # one unbroken word, wider than a phone


@pytest.fixture
def shop(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    """A refund conversation of four turns (the third failed, the last scored resolved) and
    five one-turn sessions of other users."""
    url = fresh_database("sqlite", tmp_path, request)
    ingest, reader = key_for(url, "ingest", "shop"), key_for(url, "read", "shop")
    settings = Settings(database_url=url, scheduler_enabled=False, media_dir=str(tmp_path / "m"))
    refund = turns(
        [
            ("I want a refund for my blender.", "Which order was it? " + "Our policy. " * 60),
            (f"It is {LONG}.", "Found it: a blender, delivered on Monday."),
            ("Can you refund it today?", ""),
            ("Please try again.", "Refunded: 49.90 EUR, back on your card in 3 days."),
        ],
        ids={"gen_ai.conversation.id": f"conv-{LONG}", "user.id": "ana@example.com"},
        failing=(2,),
        start=T0 + 7200 * SEC,
    )
    others = [
        run
        for i in range(5)
        for run in turns(
            [(f"Question {i}", f"Answer {i}")],
            start=T0 + i * 600 * SEC,
            ids={"session.id": f"conv-{i}", "user.id": f"user-{i}"},
        )  # fmt: skip
    ]
    body = {"resourceSpans": [{"resource": {"attributes": kvs(r.resource)},
                               "scopeSpans": [{"spans": r.spans}]} for r in refund + others]}  # fmt: skip
    score = {"id": "s1", "type": "score", "body": {"trace_id": refund[3].trace_id,
             "name": "resolved", "value": 1, "kind": "true", "source": "delayed"}}  # fmt: skip
    with (
        LiveServer(create_app(settings, start_background=False)) as server,
        httpx.Client(base_url=server.url, timeout=60) as c,
    ):
        headers = {"authorization": f"Bearer {ingest}", "content-type": "application/json"}
        r = c.post("/v1/traces", content=orjson.dumps(body), headers=headers)
        assert r.status_code == 200 and "partialSuccess" not in r.json(), r.text
        r = c.post("/api/v1/ingest", json={"events": [score]}, headers=headers)
        assert r.status_code == 200 and r.json()["accepted"] == 1, r.text
        yield {"url": server.url, "reader": reader, "refund": refund}


@pytest.mark.parametrize(("width", "height"), [(1280, 900), (390, 844)])
def test_a_reader_follows_a_session_turn_by_turn(shop, browser, width, height):  # noqa: F811
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": width, "height": height}
    )
    page = context.new_page()
    login(page, shop["url"], shop["reader"], "/sessions")
    rows = page.locator("#sessions tbody tr")
    assert rows.count() == 6
    first = rows.first.inner_text()
    assert f"conv-{LONG}" in first and "ana@example.com" in first and "resolved 1" in first
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(SHOTS / f"sessions-{width}.png"), full_page=True)
    page.get_by_role("link", name="ana@example.com").first.click()  # the user's sessions
    assert page.locator("#sessions tbody tr").count() == 1
    page.get_by_role("link", name=f"conv-{LONG}").click()

    page.wait_for_url(f"**/sessions/conv-{LONG}")
    meta = page.locator(".session-meta").inner_text()
    assert meta.startswith("user ana@example.com · 4 turns · 1 failed"), meta
    assert page.locator(".session-outcome").inner_text().startswith("Outcome: resolved 1")
    turn_cards = page.locator("li.turn")
    assert turn_cards.count() == 4
    # Every question once, in order, under its own turn; the failed turn says why.
    users = [turn_cards.nth(i).locator("li.msg.role-user .content").all_inner_texts()
             for i in range(4)]  # fmt: skip
    assert users == [["I want a refund for my blender."], [f"It is {LONG}."],
                     ["Can you refund it today?"], ["Please try again."]]  # fmt: skip
    failed = turn_cards.nth(2)
    assert "failed" in (failed.get_attribute("class") or "")
    assert "openai.InternalServerError" in failed.locator(".turn-errors").inner_text()
    assert "Refunded: 49.90 EUR" in turn_cards.nth(3).inner_text()
    # The long answer folds behind "Show the rest", readable without JavaScript.
    assert turn_cards.first.locator("details.more summary").count() == 1
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(SHOTS / f"session-{width}.png"), full_page=True)

    turn_cards.nth(1).locator("a.turn-trace").click()
    page.wait_for_url(f"**/traces/{shop['refund'][1].trace_id}")
    assert (
        page.locator(".trace-session")
        .inner_text()
        .startswith(f"Turn 2 of 4 in session conv-{LONG}")
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    context.close()


def test_the_sessions_pages_pass_axe(shop, browser):  # noqa: F811
    context = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    login(page, shop["url"], shop["reader"], "/sessions")
    for path in ("/sessions", f"/sessions/conv-{LONG}"):
        page.goto(shop["url"] + path)
        assert scan(page) == [], path
    context.close()
