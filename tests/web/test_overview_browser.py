"""The overview in Chromium: a new project's empty state, then the defaults one click away."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.main import create_app
from app.settings import Settings
from app.web.health import defaults_first_verdicts
from tests.conftest import LiveServer, fresh_database, key_for
from tests.web.test_browser import SHOTS, browser, login  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser


@pytest.fixture
def empty_project(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    url = fresh_database("sqlite", tmp_path, request)
    keys = {role: key_for(url, role, "fresh") for role in ("admin", "read")}
    settings = Settings(
        database_url=url, scheduler_enabled=False, media_dir=str(tmp_path / "m"),
        public_url="https://telltale.example.com",
    )  # fmt: skip
    with LiveServer(create_app(settings, start_background=False)) as server:
        yield {"url": server.url, **keys}


def test_a_new_project_is_told_how_to_start_and_gets_its_monitors(empty_project, browser):  # noqa: F811
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    login(page, empty_project["url"], empty_project["admin"], "/")
    env = page.locator("#otel-env").inner_text()
    assert "export OTEL_EXPORTER_OTLP_ENDPOINT=https://telltale.example.com" in env
    assert page.locator("section.mode[data-health=unwatched]").count() == 10
    page.screenshot(path=str(SHOTS / "overview-empty.png"), full_page=True)
    button = page.get_by_role("button", name="Create the default monitors")
    button.focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/?created=10")
    assert page.locator("#flash").inner_text() == "Created the default monitors (10)."
    assert page.locator("section.mode[data-health=waiting]").count() == 10
    first = page.locator("section.mode[data-mode=FM-2] .health").inner_text()
    hours = defaults_first_verdicts()["FM-2"]
    assert first == f"No verdict yet: the first needs {hours:g} h of traffic, and none has arrived."
    assert page.get_by_role("button", name="Create the default monitors").count() == 0
    page.screenshot(path=str(SHOTS / "overview-defaults.png"), full_page=True)

    reader = browser.new_page()
    login(reader, empty_project["url"], empty_project["read"], "/")
    assert reader.get_by_role("button", name="Create the default monitors").count() == 0
