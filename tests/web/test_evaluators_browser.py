"""Online evaluators in Chromium with JavaScript off, at desktop and phone width: an admin
reads the list (a judge that has scored traffic), adds a check after fixing a refused pattern
named beside its field, opens the judge's page (its score over time, errors, recent
evaluations) and tests it on a trace, reading the exact messages the judge was sent; the
trace page says which evaluator scored it and why. No page scrolls sideways, and axe-core
finds no serious violation on them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine

from app.db import make_engine
from app.evaluators.runner import run_due
from app.main import create_app
from app.settings import Settings
from bench.fake_judge import JudgeServer
from tests.app.evaluators.test_evaluators import chat_trace, settle
from tests.conftest import LiveServer, auth, fresh_database, key_for
from tests.web.test_accessibility import scan
from tests.web.test_browser import SHOTS, browser, login  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser


@pytest.fixture
def judged(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    """A shop agent's twelve traces scored by a loopback judge, two of its answers refused."""
    url = fresh_database("sqlite", tmp_path, request)
    admin = key_for(url, "admin", "shop")
    settings = Settings(database_url=url, scheduler_enabled=False, media_dir=str(tmp_path / "m"),
                        judge_allow=["127.0.0.1/32"])  # fmt: skip
    judge = JudgeServer()
    judge.answer_for = lambda p: 7.0 if "BROKEN" in p else float("RESOLVED" in p)

    def traffic() -> list[dict]:
        # Timed from when the evaluator exists (it judges traces that start after it was
        # made; one timed from before the server started was missed on a loaded machine).
        at = datetime.now(UTC) + timedelta(seconds=1)
        events: list[dict] = []
        for i in range(12):
            answer = "Your order 4411 is refunded. RESOLVED" if i % 3 else "I could not find it."
            answer = "BROKEN" if i in (4, 9) else answer
            events += chat_trace(f"order-{i:02d}", at=at + timedelta(seconds=i),
                                 question=f"Please refund order {4400 + i}.", answer=answer)  # fmt: skip
        return events

    body = {"name": "refund-resolved", "kind": "llm_judge", "score_name": "refund_resolved",
            "objective": "task_success", "api_key": "sk-browser-secret", "delay_seconds": 0,
            "daily_calls": 500,
            "judge": {"base_url": judge.base_url, "model": "judge-mini",
                      "prompt": "Was the refund request resolved?\n{conversation}"}}  # fmt: skip
    with (
        LiveServer(create_app(settings, start_background=False)) as server,
        httpx.Client(base_url=server.url, timeout=60, headers=auth(admin)) as c,
    ):
        # The evaluator first: it judges the traces that start after it was made.
        r = c.post("/api/v1/evaluators", json=body)
        assert r.status_code == 201, r.text
        evaluator_id = r.json()["id"]
        r = c.post("/api/v1/ingest", json={"events": traffic()})
        assert r.status_code == 200 and not r.json()["rejected"], r.text
        engine: Engine = make_engine(url)
        stats = run_due(engine, settings, now=settle(engine))
        engine.dispose()
        assert (stats.done, stats.errors) == (10, 2), stats
        yield {"url": server.url, "admin": admin, "id": evaluator_id, "judge": judge}
    judge.close()


@pytest.mark.parametrize(("width", "height"), [(1280, 900), (390, 844)])
def test_an_admin_reads_the_evaluators_and_tests_the_judge_on_a_trace(
    judged,
    browser,  # noqa: F811
    width,
    height,
):
    context = browser.new_context(java_script_enabled=False,
                                  viewport={"width": width, "height": height})  # fmt: skip
    page = context.new_page()

    def fits(name: str) -> None:
        assert page.evaluate("document.documentElement.scrollWidth") <= width, name
        page.screenshot(path=str(SHOTS / f"evaluators-{name}-{width}.png"), full_page=True)

    login(page, judged["url"], judged["admin"], "/settings/evaluators")
    row = page.locator("#evaluators tbody tr")
    assert row.count() == 1
    cells = row.first.locator("td").all_inner_texts()
    assert cells[:5] == ["refund-resolved", "LLM judge judge-mini, answering with a score from 0 to 1",
                         "refund_resolved (predicts task_success)", "1", "running"]  # fmt: skip
    assert cells[5] == "12 of 500 calls, 720 of 10,000,000 tokens, 2 failed"
    assert cells[6] == "10 done, 2 error"

    page.get_by_label("Name", exact=True).fill("no-card-numbers")
    page.get_by_label("built-in check").check()
    page.get_by_label("Passes when", exact=True).select_option("pattern")
    page.get_by_label("Pattern, RE2 syntax (pattern check)").fill(r"(\d{16}")
    page.get_by_label("The pattern check passes when the pattern is").select_option("false")
    page.get_by_role("button", name="Create evaluator").press("Enter")
    page.locator("#form-error").wait_for()
    beside = page.locator("#ev-err-pattern")
    assert beside.inner_text().startswith("not a valid RE2 pattern")
    pattern = page.get_by_label("Pattern, RE2 syntax (pattern check)")
    assert pattern.get_attribute("aria-invalid") == "true"
    assert pattern.input_value() == r"(\d{16}"  # what was typed is kept
    box, err = pattern.bounding_box(), beside.bounding_box()
    assert 0 <= err["y"] - (box["y"] + box["height"]) < 40  # right below its field
    fits("refused")
    pattern.fill(r"\b\d{16}\b")
    page.get_by_role("button", name="Create evaluator").press("Enter")
    page.locator("#flash").wait_for()
    assert page.locator("#flash").inner_text().startswith("Evaluator 'no-card-numbers' saved")
    assert page.locator("#evaluators tbody tr").count() == 2
    fits("list")

    page.get_by_role("link", name="refund-resolved", exact=True).click()
    page.wait_for_url(f"{judged['url']}/evaluators/{judged['id']}")
    assert page.locator("#ev-today").inner_text() == (
        "12 of 500 calls, 720 of 10,000,000 tokens, 2 failed")  # fmt: skip
    chart = page.locator("#ev-chart svg.run-chart")
    assert chart.locator("circle").count() >= 1 and chart.bounding_box()["width"] <= width
    errors = page.locator("#ev-errors li")
    assert errors.count() == 2
    assert "answer: `score` 7.0 is not a number from 0 to 1" in errors.first.inner_text()
    assert page.locator("#evaluations tbody tr").count() == 12
    fits("page")

    page.get_by_label("Trace id").fill("order-01")
    page.get_by_role("button", name="Evaluate it").press("Enter")
    page.locator("#try-result").wait_for()
    assert page.locator("#try-answer").inner_text() == "Score 1 — judged 1"
    messages = page.locator("pre.try-message")
    assert messages.count() == 2
    assert "never instructions" in messages.nth(0).inner_text()
    user = messages.nth(1).inner_text()
    assert user.startswith("Was the refund request resolved?")
    assert '<trace_data name="conversation">' in user and "Please refund order 4401." in user
    assert (
        page.locator("#flash").inner_text() == "Evaluated trace order-01 once; nothing was stored."
    )
    fits("tried")

    page.goto(f"{judged['url']}/traces/order-01")
    score = page.locator('tr[data-score="refund_resolved"]')
    assert "evaluator refund-resolved v1" in score.inner_text()
    assert score.locator("td.why").inner_text() == "judged 1"
    fits("trace")
    context.close()


def test_the_evaluator_pages_have_no_serious_accessibility_violation(judged, browser):  # noqa: F811
    context = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    login(page, judged["url"], judged["admin"], "/settings/evaluators")
    found = {"list": scan(page)}
    page.goto(f"{judged['url']}/settings/evaluators/{judged['id']}")
    found["edit"] = scan(page)
    page.goto(f"{judged['url']}/evaluators/{judged['id']}")
    page.get_by_label("Trace id").fill("order-04")
    page.get_by_role("button", name="Evaluate it").click()
    page.locator("#try-result").wait_for()
    found["page, tried"] = scan(page)
    context.close()
    bad = {k: v for k, v in found.items() if v}
    assert not bad, bad
