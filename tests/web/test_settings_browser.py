"""Settings in Chromium with JavaScript off: an admin creates a key (shown once), creates
the defaults, edits a monitor with a bad value and reads the refusal, all by keyboard."""

from __future__ import annotations

import pytest

from tests.web.test_browser import SHOTS, browser, login  # noqa: F401 (fixture)
from tests.web.test_overview_browser import empty_project  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser


def test_an_admin_sets_up_the_project_without_javascript(empty_project, browser):  # noqa: F811
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1280, "height": 900}
    )
    page = context.new_page()
    login(page, empty_project["url"], empty_project["admin"], "/settings/keys")
    page.select_option("#key-role", "ingest")
    page.fill("#key-name", "support prod")
    page.locator("#key-name").press("Enter")
    page.locator("#new-key-value").wait_for()
    assert page.locator("#new-key-value").inner_text().startswith("tt_")
    assert "shown only this once" in page.locator("#flash").inner_text()
    page.screenshot(path=str(SHOTS / "settings-keys.png"), full_page=True)

    page.goto(f"{empty_project['url']}/settings/monitors")
    page.get_by_role("button", name="Create the default monitors").press("Enter")
    page.locator("#flash").wait_for()
    assert page.locator("section.monitor-settings").count() == 10
    card = page.locator("section.monitor-settings").filter(has_text="FM-2")
    card.locator("summary").press("Enter")
    card.locator("input[name=interval_seconds]").fill("0")
    card.locator("input[name=interval_seconds]").press("Enter")
    page.locator("#form-error").wait_for()
    assert (
        "interval_seconds: a monitor runs at most once a minute (60 s); got 0"
        in page.locator("#form-error").inner_text()
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.screenshot(path=str(SHOTS / "settings-monitors-error.png"), full_page=True)

    page.goto(f"{empty_project['url']}/settings/scores")
    page.locator("input[name=name]").first.fill("resolved")
    page.locator("select[name=role]").first.select_option("true")
    page.get_by_role("button", name="Save roles").click()
    assert "Score roles saved" in page.locator("#flash").inner_text()
    page.screenshot(path=str(SHOTS / "settings-scores.png"), full_page=True)
    context.close()


def test_derived_fields_are_edited_field_by_field_by_keyboard(empty_project, browser):  # noqa: F811
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1280, "height": 900}
    )
    page = context.new_page()
    login(page, empty_project["url"], empty_project["admin"], "/settings/derived")
    assert page.get_by_label("Agent 1", exact=True).input_value() == ""
    page.get_by_label("Agent 1", exact=True).fill("support")
    page.get_by_label("Agent 1: read by").select_option("regex")
    page.get_by_label("Agent 1: expression").fill("(?<=x)y")  # RE2 refuses lookbehind
    page.get_by_label("Agent 1: expression").press("Enter")
    page.locator("#form-error").wait_for()
    assert "decision.agents.support" in page.locator("#form-error").inner_text()
    assert page.get_by_label("Agent 1: expression").input_value() == "(?<=x)y"  # kept
    page.get_by_label("Agent 1: expression").fill(r"ACTION: (\w+)")
    page.get_by_label("Eval traffic: environments, comma-separated").fill("eval, staging")
    page.get_by_role("button", name="Save these fields").press("Enter")
    page.locator("#flash").wait_for()
    assert "Derived fields saved" in page.locator("#flash").inner_text()
    assert page.locator("#derived-state").inner_text() == "customised"
    assert page.get_by_label("Agent 1: expression").input_value() == r"ACTION: (\w+)"
    assert '"staging"' in page.locator("#derived-rules").input_value()  # the JSON agrees
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.screenshot(path=str(SHOTS / "settings-derived-fields.png"), full_page=True)
    context.close()
