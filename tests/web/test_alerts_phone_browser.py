"""On-call on a phone (390 px) and a desktop (1280 px), in Chromium: the alerts list and the
alert page fit the screen, each alert reads sentence first with its severity and how long
it has fired, the Acknowledge button is on screen, and an acknowledged alert says when and
by whom ("open … · acknowledged just now by pager"), not that it was acknowledged for as
long as it has been open."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from app.db import make_engine
from app.keys import create_key
from app.main import create_app
from app.settings import Settings
from tests.conftest import LiveServer, fresh_database
from tests.web.test_alert_page import _alert
from tests.web.test_browser import browser, login  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/phone-shots")


@pytest.fixture
def firing(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    """One firing FM-2 alert and an admin key named "pager"."""
    url = fresh_database("sqlite", tmp_path, request)
    engine = make_engine(url)
    with Session(engine) as session:
        key = create_key(session, project_name="p1", role="admin", name="pager")
        session.commit()
    alert_id = _alert(engine)
    engine.dispose()
    settings = Settings(database_url=url, scheduler_enabled=False, media_dir=str(tmp_path / "m"))
    with LiveServer(create_app(settings, start_background=False)) as server:
        yield {"url": server.url, "key": key, "alert": alert_id}


def _fits(page, width: int) -> None:
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"{page.url}: {scroll} px wide in a {width} px viewport"


def _on_screen(page, locator, width: int) -> None:
    box = locator.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1280, 900)])
def test_on_call_reads_and_acknowledges_an_alert_on_a_phone(firing, browser, width, height):  # noqa: F811
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    login(page, firing["url"], firing["key"], f"/alerts/{firing['alert']}")
    _fits(page, width)
    _on_screen(page, page.get_by_role("button", name="Acknowledge"), width)
    assert page.locator("#open-for").inner_text().startswith("firing for 1h 00m")
    page.screenshot(path=str(SHOTS / f"alert-firing-{width}.png"), full_page=True)

    page.goto(f"{firing['url']}/alerts?state=firing")
    _fits(page, width)
    card = page.locator(f"#alert-{firing['alert']}")
    sentence = card.locator(".sentence-text")
    severity, state = card.locator("td.severity"), card.locator("td.state")
    ack = card.get_by_role("button", name="Acknowledge")
    _on_screen(page, ack, width)
    _on_screen(page, sentence, width)
    assert severity.inner_text() == "critical"
    assert state.inner_text().startswith("firing for 1h 00m")
    if width == 390:  # a card: the sentence, then severity and how long, then the actions
        top = {n: loc.bounding_box()["y"] for n, loc in
               [("sentence", sentence), ("severity", severity), ("ack", ack),
                ("mode", card.locator("td.mode"))]}  # fmt: skip
        assert top["sentence"] < top["severity"] < top["ack"] < top["mode"], top
        assert ack.bounding_box()["y"] + ack.bounding_box()["height"] <= height  # no scrolling
    page.screenshot(path=str(SHOTS / f"alerts-firing-{width}.png"), full_page=True)

    ack.click()  # through the JSON API: the row says who and when at once
    acked = page.locator(f"#alert-{firing['alert']}[data-state=acknowledged]")
    acked.wait_for()
    line = acked.locator(".open-for").inner_text()
    assert line.startswith("open 1h 00m") and line.endswith(" · acknowledged just now by pager")
    assert "acknowledged for" not in acked.inner_text()
    _fits(page, width)
    page.screenshot(path=str(SHOTS / f"alerts-acknowledged-{width}.png"), full_page=True)

    page.goto(f"{firing['url']}/alerts")  # as the server words it
    line = page.locator(f"#alert-{firing['alert']} .open-for").inner_text()
    assert line.startswith("open 1h 00m") and line.endswith(" · acknowledged just now by pager")
    _fits(page, width)
    page.goto(f"{firing['url']}/alerts/{firing['alert']}")
    line = page.locator("#open-for").inner_text()
    assert line.startswith("open 1h 00m") and line.endswith(" · acknowledged just now by pager")
    _fits(page, width)
    _on_screen(page, page.get_by_role("button", name="Resolve"), width)
    page.screenshot(path=str(SHOTS / f"alert-acknowledged-{width}.png"), full_page=True)
    context.close()
