"""Settings · Model prices in Chromium with JavaScript off: an admin sets a price for a
private model and a bad one by keyboard, reads the refusal, and looks a model up."""

from __future__ import annotations

import pytest

from app.pricing.table import shipped_table
from tests.web.test_browser import SHOTS, browser, login  # noqa: F401 (fixture)
from tests.web.test_overview_browser import empty_project  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser


def test_an_admin_sets_a_model_price_without_javascript(empty_project, browser):  # noqa: F811
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    login(page, empty_project["url"], empty_project["admin"], "/settings/prices")
    assert page.locator("#table-version").inner_text() == shipped_table().version
    assert "No model calls in the last 7 days yet." in page.locator("#no-calls").inner_text()

    page.get_by_label("model 1", exact=True).fill("acme/foo-7b")
    page.get_by_label("input price 1", exact=True).fill("0.2")
    page.get_by_label("output price 1", exact=True).fill("-1")
    page.get_by_label("output price 1", exact=True).press("Enter")
    page.locator("#form-error").wait_for()
    assert ("prices.0.output_per_million: Input should be greater than or equal to 0"
            in page.locator("#form-error").inner_text())  # fmt: skip
    assert page.get_by_label("model 1", exact=True).input_value() == "acme/foo-7b"
    page.get_by_label("output price 1", exact=True).fill("0.4")
    page.get_by_role("button", name="Save prices").click()
    assert "Saved 1 model price." in page.locator("#flash").inner_text()
    # stored as the lookup reads it: the provider prefix does not matter
    assert page.get_by_label("model 1", exact=True).input_value() == "foo-7b"
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.screenshot(path=str(SHOTS / "settings-prices.png"), full_page=True)

    page.get_by_label("Model", exact=True).fill("FOO-7B")
    page.get_by_role("button", name="Look up").click()
    result = page.locator("#lookup-result").inner_text()
    assert "is billed as foo-7b (this project's price): $0.2 input, $0.4 output" in result
    context.close()
