"""The agent pages without a browser, as a person reads them: the home's row of each agent,
an agent's figures and charts, two versions compared with the tests named, the graph with
its loop and its links to a tool's traces (the traces list's tool filter), and names from
telemetry escaped."""

from __future__ import annotations

import re

from tests.app.agents.traffic import send_shop
from tests.app.rollups.traffic import ingest, settle, trace
from tests.conftest import sqlite_only
from tests.web.test_pages import login
from tests.web.test_session_pages import text


def rows(page: str, table_id: str) -> list[list[str]]:
    """The cells of each row of the table, as read."""
    body = re.search(rf'<table [^>]*id="{table_id}">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert body is not None, page
    return [[text(td) for td in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
            for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S)]  # fmt: skip


def test_the_home_lists_each_agent_and_the_agent_page_its_figures(client, make_key, engine):
    send_shop(client, make_key("ingest"), engine)
    login(client, make_key("read"))
    page = client.get("/agents", params={"range": "7d"}).text
    listed = rows(page, "agents")
    assert [r[0] for r in listed] == ["shop 2 versions", "helper"]
    shop = dict(zip(["agent", "traces", "failed", "success", "p50", "p95", "tokens",
                     "cost_trace", "cost", "loops", "alerts", "seen"], listed[0], strict=True))  # fmt: skip
    assert shop["traces"].startswith("80 ") and shop["failed"] == "20.0%"
    assert shop["success"] == "60.0% resolved" and shop["loops"] == "5.0%"
    assert (shop["tokens"], shop["cost"]) == ("200", "$1.60")
    p50, p95 = (float(shop[k].removesuffix(" s")) for k in ("p50", "p95"))
    assert abs(p50 - 2) <= 0.025 and abs(p95 - 4) <= 0.045  # the sketch: 1 %, then rounding
    assert '<a href="/agents">Agents</a>' in page  # in the navigation

    page = client.get("/agents/shop").text
    figures = text(re.search(r'<dl class="figures card" id="figures">(.*?)</dl>', page, re.S).group(1))
    assert "Traces 80" in figures and "Success 60.0% resolved, 40 scores" in figures
    assert "Loops 5.0%" in figures and "Tool errors 9.1% of 88 calls" in figures
    titles = re.findall(r'<section class="card run-chart-box" id="chart-\d+">\s*<h2>(.*?)</h2>', page)
    assert titles == ["Traces per hour", "Success (resolved)", "Errors and loops", "Latency",
                      "Tokens per trace", "Cost per trace", "Cost per day (UTC)"]  # fmt: skip
    assert page.count('<rect class="bar"') >= 2 and "<polyline" in page
    assert re.findall(r"compare with 2\.0", page) == ["compare with 2.0"]


def test_the_comparison_reads_as_sentences_with_their_tests(client, make_key, engine):
    send_shop(client, make_key("ingest"), engine)
    login(client, make_key("read"))
    page = client.get("/agents/shop/compare").text
    got = {r[0]: r for r in rows(page, "measures")}
    assert got["trace failure rate"][1:5] == ["10.0% n=40", "30.0% n=40", "+20.0 points", "Fisher exact"]
    assert got["cost per trace"][3] == "+200.0%" and got["cost per trace"][4] == "Welch t"
    assert got["p50 latency"][4] == "Mann-Whitney U" and got["p50 latency"][5].endswith("significant")
    assert 'option value="1.0" selected' in page and 'option value="2.0" selected' in page
    assert len(re.findall(r'<a href="/traces/2\.0-\d+">', page)) == 5
    swapped = client.get("/agents/shop/compare", params={"a": "2.0", "b": "1.0"}).text
    assert rows(swapped, "measures")[1][3] == "−20.0 points"
    r = client.get("/agents/shop/compare", params={"a": "nope"})
    assert r.status_code == 422 and "a: no traffic of version" in r.text
    one = client.get("/agents/helper/compare").text
    assert "has 1 version(s); a comparison needs two" in one


def test_the_graph_shows_the_loop_and_links_a_tools_traces(client, make_key, engine):
    send_shop(client, make_key("ingest"), engine)
    login(client, make_key("read"))
    page = client.get("/agents/shop/graph").text
    assert 'class="edge loop"' in page and "↻ 8" in page
    steps = {r[0]: r for r in rows(page, "steps")}
    assert steps["search"][6].split(" , ") == ["1.0-00", "1.0-05", "1.0-10"]  # failed calls first
    assert '<a href="/traces/1.0-05">1.0-05</a>' in page
    link = re.search(r'<a href="(/traces\?agent=shop&amp;since=[^"]+&amp;tool=search)"', page)
    assert link is not None
    listed = client.get(link.group(1).replace("&amp;", "&")).text
    ids = set(re.findall(r'<a href="/traces/([^"]+)">', listed))
    assert len(ids) == 50 and all(i.startswith(("1.0-", "2.0-")) for i in ids)  # one page
    assert not set(re.findall(r'<a href="/traces/([^"]+)">',
                              client.get("/traces", params={"tool": "nothing"}).text))  # fmt: skip
    model = re.search(r'<a href="(/traces\?agent=shop&amp;since=[^"]+&amp;model=gpt-x)"', page)
    assert model is not None  # a model's node opens the traces with a call of that model
    assert 'value="gpt-x"' in client.get(model.group(1).replace("&amp;", "&")).text


def test_the_traces_api_filters_by_tool_and_model(client, make_key, engine):
    send_shop(client, make_key("ingest"), engine)
    key = {"authorization": f"Bearer {make_key('read')}"}

    def ids(**params: str) -> set[str]:
        r = client.get("/api/v1/traces", params={"limit": 500, **params}, headers=key)
        assert r.status_code == 200, r.text
        return {t["trace_id"] for t in r.json()["traces"]}

    assert len(ids(model="gpt-x")) == 85 and ids(model="gpt-y") == set()
    assert ids(tool="search", agent="helper") == set() and len(ids(tool="search")) == 80
    assert ids(tool="search", model="gpt-x") == ids(tool="search")


@sqlite_only  # what the pages print, not what the database stores
def test_names_from_telemetry_are_escaped_and_unknown_agents_404(client, make_key, engine):
    evil = '<script>alert(1)</script>"'
    ingest(client, make_key("ingest"), trace("x1", agent=evil, at=__import__("datetime").datetime.now(
        __import__("datetime").UTC) - __import__("datetime").timedelta(hours=1), tools=((evil, "ok"),)))
    settle(engine)
    login(client, make_key("read"))
    for path in ("/agents", "/agents/" + evil, "/agents/" + evil + "/graph", "/agents/" + evil + "/compare"):
        page = client.get(path).text
        assert "<script>alert" not in page, path
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in client.get("/agents/" + evil + "/graph").text
    assert client.get("/agents/nobody").status_code == 404
    assert client.get("/agents", params={"range": "2d"}).status_code == 422


def test_the_overview_leads_to_the_agents(client, make_key, engine):
    login(client, make_key("read"))
    assert 'id="agents-strip"' not in client.get("/").text  # no traffic: the onboarding leads
    send_shop(client, make_key("ingest"), engine)
    page = client.get("/").text
    strip = text(re.search(r'<section class="card agents-strip" id="agents-strip">(.*?)</section>',
                           page, re.S).group(1))  # fmt: skip
    assert strip.startswith("Agents last 24 hours shop 80 traces, 20.0% failed · helper 5 traces")
    assert '<a href="/agents/shop">shop</a>' in page and "Failure modes" in page  # cards stay


@sqlite_only  # how the pages link a name, not what the database stores
def test_a_name_with_slashes_links_to_its_own_pages(client, make_key, engine):
    from datetime import UTC, datetime, timedelta

    name = "team/../../settings"  # a path a browser would resolve elsewhere, were / kept
    ingest(client, make_key("ingest"), trace("s1", agent=name, at=datetime.now(UTC) - timedelta(hours=1)))
    settle(engine)
    login(client, make_key("read"))
    home = client.get("/agents").text
    assert 'href="/agents/team%2F..%2F..%2Fsettings?range=24h"' in home
    for path in ("", "/graph", "/compare"):
        page = client.get("/agents/team%2F..%2F..%2Fsettings" + path)
        assert page.status_code == 200 and "team/../../settings" in text(page.text), path
    page = client.get("/agents/team%2F..%2F..%2Fsettings").text
    assert 'href="/agents/team%2F..%2F..%2Fsettings/graph?range=24h"' in page


@sqlite_only  # what a page says of a range without traffic
def test_an_agent_quiet_in_the_range_says_so(client, make_key, engine):
    from datetime import UTC, datetime, timedelta

    ingest(client, make_key("ingest"), trace("old", agent="nightly", at=datetime.now(UTC) - timedelta(days=3)))
    settle(engine)
    login(client, make_key("read"))
    assert "No agent traffic in the last 24 hours" in client.get("/agents").text
    page = client.get("/agents/nightly").text  # known, quiet in the last 24 hours
    assert page.count("No traffic in this range") == 7 and "Traces 0" in text(page)
    week = client.get("/agents/nightly", params={"range": "7d"}).text
    assert week.count("No traffic in this range") == 0 and "Traces 1" in text(week)
    assert "has 1 version(s)" in client.get("/agents/nightly/compare").text
    graph = client.get("/agents/nightly/graph").text
    assert "No traces of this agent in the range" in graph
