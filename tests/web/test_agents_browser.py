"""The agent pages in Chromium, at desktop and phone width, JavaScript off and on: a reader
finds the busiest agents on the home, opens one and reads its figures and charts, compares
its two versions, opens its graph and follows a tool to that tool's traces; no page is
wider than the screen, and axe-core finds no serious violation. Screenshots go to
``$TELLTALE_SHOTS`` (default artifacts/screenshots/)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from app.db import make_engine
from app.main import create_app
from app.settings import Settings
from pipelines.scenarios import generate_workload
from tests.app.agents.traffic import shop_traffic
from tests.app.rollups.traffic import settle
from tests.conftest import LiveServer, auth, fresh_database, key_for
from tests.web.test_accessibility import scan
from tests.web.test_browser import SHOTS, browser, login  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser
OUT = Path(os.environ.get("TELLTALE_SHOTS") or SHOTS)
LONG = "order-router-" + "7" * 60  # one unbroken word, wider than a phone


def _span(tid: str, at: datetime, sid: str, parent: str | None, kind: str, name: str, k: int,
          **more: object) -> dict:  # fmt: skip
    return {"id": f"{tid}-{sid}", "type": "span", "body": {
        "trace_id": tid, "span_id": sid, "parent_span_id": parent, "kind": kind, "name": name,
        "step_index": k, "started_at": (at + timedelta(seconds=k)).isoformat(),
        "ended_at": (at + timedelta(seconds=k + 1)).isoformat(), **more}}  # fmt: skip


def _planner(now: datetime) -> list[dict]:
    """Traces of an agent with a sub-agent (a span tree: agent > llm, agent > agent > tools)."""
    out = []
    for i in range(6):
        tid, at = f"plan-{i}", now - timedelta(hours=3, minutes=i)
        out += [
            {"id": tid, "type": "trace", "body": {"trace_id": tid, "agent": LONG, "agent_version": "3",
             "started_at": at.isoformat(), "ended_at": (at + timedelta(seconds=9)).isoformat()}},
            _span(tid, at, "root", None, "agent", LONG, 0),
            _span(tid, at, "think", "root", "llm", "chat", 1, response_model="gpt-4o", total_tokens=500),
            _span(tid, at, "sub", "root", "agent", "researcher", 2),
            _span(tid, at, "w1", "sub", "tool", "web_search", 3, tool_name="web_search"),
            _span(tid, at, "w2", "sub", "tool", "web_search", 4, tool_name="web_search",
                  status="error" if i % 2 else "ok"),
            _span(tid, at, "say", "root", "llm", "chat", 5, response_model="gpt-4o", total_tokens=300),
        ]  # fmt: skip
    return out


@pytest.fixture
def agents_world(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    url = fresh_database("sqlite", tmp_path, request)
    ingest, reader = key_for(url, "ingest", "shop"), key_for(url, "read", "shop")
    settings = Settings(database_url=url, scheduler_enabled=False, media_dir=str(tmp_path / "m"))
    now = datetime.now(UTC)
    events = generate_workload(5, now - timedelta(hours=20), timedelta(hours=20),
                               traces_per_hour=25, include_embeddings=False, images_per_hour=0.0)  # fmt: skip
    events += shop_traffic(now)[0] + _planner(now)
    with (
        LiveServer(create_app(settings, start_background=False)) as server,
        httpx.Client(base_url=server.url, timeout=120, headers=auth(ingest)) as c,
    ):
        for i in range(0, len(events), 2000):
            r = c.post("/api/v1/ingest", json={"events": events[i : i + 2000]})
            assert r.status_code == 200 and not r.json()["rejected"], r.text[:500]
        engine = make_engine(url)
        settle(engine)
        engine.dispose()
        yield {"url": server.url, "reader": reader}


def _fits(page, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize(("width", "js"), [(1280, False), (390, False), (1280, True)])
def test_a_reader_goes_from_the_agents_to_a_tools_traces(agents_world, browser, width, js):  # noqa: F811
    w = agents_world
    context = browser.new_context(java_script_enabled=js, viewport={"width": width, "height": 900})
    page = context.new_page()
    tag = f"{width}{'-js' if js else ''}"
    login(page, w["url"], w["reader"], "/")  # the first page leads to the agents
    assert "shop 80 traces, 20.0% failed" in page.locator("#agents-strip").inner_text()
    _fits(page, width)
    page.screenshot(path=str(OUT / f"overview-{tag}.png"), full_page=True)
    page.locator("#agents-strip").get_by_role("link", name="Every agent").click()
    page.wait_for_url("**/agents")
    rows = page.locator("#agents tbody tr")
    names = [rows.nth(i).locator("td.agent-name a").inner_text() for i in range(rows.count())]
    assert set(names) == {"support-agent", "research-agent", "billing-agent", "shop", "helper", LONG}
    _fits(page, width)
    page.screenshot(path=str(OUT / f"agents-{tag}.png"), full_page=True)

    page.get_by_role("link", name="shop", exact=True).click()
    page.wait_for_url("**/agents/shop?range=24h")
    figures = page.locator("#figures").inner_text()
    assert "80" in figures and "60.0%" in figures and "resolved" in figures
    assert page.locator(".run-chart-box svg.agent-chart").count() == 7
    assert page.locator("#chart-0 rect.bar").count() >= 2  # traces per hour
    _fits(page, width)
    page.screenshot(path=str(OUT / f"agent-{tag}.png"), full_page=True)

    page.get_by_role("link", name="Compare versions").click()
    page.wait_for_url("**/agents/shop/compare?range=24h")
    first = page.locator("#measures tbody tr").filter(has_text="trace failure rate").inner_text()
    assert "10.0%" in first and "30.0%" in first and "+20.0 points" in first and "Fisher" in first
    assert page.locator("#examples a").count() == 10
    _fits(page, width)
    page.screenshot(path=str(OUT / f"compare-{tag}.png"), full_page=True)

    page.get_by_role("link", name="Graph").click()
    page.wait_for_url("**/agents/shop/graph?range=24h")
    assert page.locator("svg.agent-graph path.edge.loop").count() == 1
    _fits(page, width)
    page.screenshot(path=str(OUT / f"graph-{tag}.png"), full_page=True)
    page.locator('#nodes a:text-is("search")').click()
    page.wait_for_url("**/traces?**tool=search**")
    assert page.locator("input[name=tool]").input_value() == "search"
    assert page.locator("table.traces tbody tr").count() == 50
    _fits(page, width)
    context.close()


def test_a_sub_agent_and_a_long_name_fit_a_phone(agents_world, browser):  # noqa: F811
    w = agents_world
    context = browser.new_context(java_script_enabled=False, viewport={"width": 390, "height": 844})
    page = context.new_page()
    login(page, w["url"], w["reader"], f"/agents/{LONG}/graph")
    nodes = page.locator("svg.agent-graph g.node")
    kinds = {nodes.nth(i).get_attribute("data-node") for i in range(nodes.count())}
    assert {"agent:researcher", "tool:web_search", "llm:gpt-4o", "start", "end"} <= kinds
    assert "3 (25.0%)" in page.locator("#nodes").inner_text()  # 3 of its 12 calls failed
    _fits(page, 390)
    page.screenshot(path=str(OUT / "graph-subagent-390.png"), full_page=True)
    page.goto(f"{w['url']}/agents/{LONG}")
    _fits(page, 390)
    context.close()


def test_a_busy_agents_graph_and_versions(agents_world, browser):  # noqa: F811
    """The scenario generator's support agent: plans, model calls and four tools, two
    versions; its graph has a node per step kind and its comparison defaults to 1.4.1 against
    1.4.0."""
    w = agents_world
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    login(page, w["url"], w["reader"], "/agents/support-agent/graph")
    nodes = page.locator("svg.agent-graph g.node")
    ids = {nodes.nth(i).get_attribute("data-node") for i in range(nodes.count())}
    assert {"start", "end", "tool:search", "tool:http_fetch", "tool:db_query"} <= ids, ids
    assert "llm:" not in ids  # model calls without a model name are no node of their own
    reason = page.locator('svg.agent-graph g.node[data-node="llm:llm.reason"]').text_content() or ""
    assert "calls in the sample" in reason  # no model named: counted in the sample only
    assert page.locator("svg.agent-graph path.edge").count() >= 8
    page.screenshot(path=str(OUT / "graph-support-1280.png"), full_page=True)
    page.goto(f"{w['url']}/agents/support-agent/compare")
    head = page.locator("#measures thead").inner_text()
    assert "1.4.0 (A)" in head and "1.4.1 (B)" in head
    examples = page.locator("#examples a").all_inner_texts()
    assert len(examples) == 10 and not any("-e" in e for e in examples)  # no eval-harness run
    page.screenshot(path=str(OUT / "compare-support-1280.png"), full_page=True)
    context.close()


def test_the_agent_pages_pass_axe(agents_world, browser):  # noqa: F811
    w = agents_world
    context = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    login(page, w["url"], w["reader"], "/agents")
    for path in ("/agents", "/agents/shop", "/agents/shop/compare", "/agents/shop/graph"):
        page.goto(w["url"] + path)
        assert scan(page) == [], path
    context.close()
