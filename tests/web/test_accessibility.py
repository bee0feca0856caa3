"""Every page, scanned by axe-core in Chromium: no serious or critical violation.

axe-core is vendored under tests/web/vendor (MPL-2.0) and injected into each page; the
browser context bypasses the pages' CSP only so that the test can inject it (Telltale
never serves the file). Each violation is reported with its rule, impact and the first
offending elements, so a failure says what to mend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.test_browser import browser, login, world  # noqa: F401  (fixtures)

AXE = Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js"
BLOCKING = {"serious", "critical"}

pytestmark = pytest.mark.browser


def scan(page: Any) -> list[dict[str, Any]]:
    page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        "async () => { const r = await axe.run(document, {resultTypes: ['violations']});"
        " return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))})); }"
    )
    return [v for v in result if v["impact"] in BLOCKING]


def test_no_page_has_a_serious_accessibility_violation(world, browser):  # noqa: F811
    from sqlalchemy import select

    from app.models import Alert
    from tests.web.test_browser import db_scalar

    context = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{world['url']}/login")
    found: dict[str, list[dict[str, Any]]] = {"/login": scan(page)}
    login(page, world["url"], world["admin"], "/")
    alert_id = db_scalar(world["db"], select(Alert.id).where(Alert.failure_mode == "FM-2"))
    page.goto(f"{world['url']}/traces")
    trace = page.locator("table.traces tbody a").first.get_attribute("href")
    paths = [
        "/", f"/monitors/{world['fm2']['id']}", "/alerts", f"/alerts/{alert_id}", "/traces",
        str(trace), "/settings/keys", "/settings/monitors", "/settings/channels",
        "/settings/silences", "/settings/scores", "/settings/derived", "/settings/retention", "/label",
        "/label/support", "/settings/queues", "/settings/queues/support",
    ]  # fmt: skip
    for path in paths:
        page.goto(f"{world['url']}{path}")
        page.wait_for_load_state("networkidle")
        found[path] = scan(page)
    context.close()
    bad = {p: v for p, v in found.items() if v}
    assert not bad, "\n".join(
        f"{p}: {v['id']} ({v['impact']}): {v['help']} at {v['nodes']}"
        for p, vs in bad.items()
        for v in vs
    )
