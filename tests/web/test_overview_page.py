"""The overview without a browser: an empty project gets the OTel environment block and a
button for the default monitors (admin, CSRF); health reads in words, apart from the last
run's status; OTLP traces are counted in the last hour."""

from __future__ import annotations

import re
import time

from sqlalchemy import func, select

from app.db import write_session
from app.models import Monitor
from app.web.health import defaults_first_verdicts
from tests.app.derive.otlp_agent import agent_run, send
from tests.conftest import sqlite_only
from tests.web.test_pages import login


def csrf(page: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def count_monitors(engine) -> int:
    with write_session(engine) as session:
        return session.scalar(select(func.count()).select_from(Monitor))


def test_an_empty_project_shows_the_env_block_and_creates_the_defaults(client, make_key, engine):
    admin = make_key("admin")
    login(client, admin)
    page = client.get("/").text
    assert "Send traces to this project" in page
    block = re.search(r'<pre class="otel-env" id="otel-env">(.*?)</pre>', page, re.S).group(1)
    assert "export OTEL_EXPORTER_OTLP_ENDPOINT=" in block
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only" in block
    assert "Create the default monitors" in page
    assert page.count("not watched") == 10 and "no open alerts" not in page
    # No CSRF token, or a foreign one: refused, nothing created.
    for token in ("", "forged"):
        r = client.post("/monitors/defaults", data={"csrf": token}, follow_redirects=False)
        assert r.status_code == 403 and "csrf" in r.text, r.text
    assert count_monitors(engine) == 0
    r = client.post("/monitors/defaults", data={"csrf": csrf(page)}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/?created=10"
    page = client.get("/?created=10").text
    assert "Created the default monitors (10)." in page and count_monitors(engine) == 10
    assert page.count("No verdict yet: the first needs ") == 10
    for mode, hours in defaults_first_verdicts().items():
        card = re.search(rf'data-mode="{mode}".*?</section>', page, re.S).group(0)
        assert f"the first needs {hours:g} h of traffic, and none has arrived." in card, mode
    # Again: the existing ones are kept, none added.
    client.post("/monitors/defaults", data={"csrf": csrf(page)})
    assert count_monitors(engine) == 10


def test_only_an_admin_may_create_the_defaults(client, make_key, engine):
    for role in ("read", "annotate"):
        client.cookies.clear()
        login(client, make_key(role))
        page = client.get("/").text
        assert "Create the default monitors" not in page and "An admin can create them" in page
        r = client.post("/monitors/defaults", data={"csrf": csrf(page)}, follow_redirects=False)
        assert r.status_code == 403 and "admin role" in r.text
    assert count_monitors(engine) == 0
    client.cookies.clear()
    r = client.post("/monitors/defaults", data={"csrf": "x"}, follow_redirects=False)
    assert r.status_code in (303, 401, 403)
    assert count_monitors(engine) == 0


def test_otlp_traces_count_and_the_first_verdict_is_announced(client, make_key, engine):
    admin = make_key("admin")
    now_ns = time.time_ns()
    send(client, admin, [agent_run("hello", start=now_ns - 60 * 10**9) for _ in range(3)])
    login(client, admin)
    page = client.get("/").text
    rate = re.sub(
        r"\s+",
        " ",
        re.sub(r"<[^>]+>", "", re.search(r'id="ingest-rate">(.*?)</p>', page, re.S).group(1)),
    )
    assert "3 traces · 6 spans" in rate, rate  # OTLP: no trace events, still 3
    assert "Send traces to this project" not in page  # data arrived: no env block
    client.post("/monitors/defaults", data={"csrf": csrf(page)})
    page = client.get("/").text
    expected = re.findall(
        r"No verdict yet: the first is expected at [\d-]+ [\d:]+ UTC \(([\d.]+) h after the first",
        page,
    )
    # As long as each default's windows need (reference + lag + current).
    wanted = sorted(f"{h:g}" for h in defaults_first_verdicts().values())
    assert sorted(expected) == wanted, expected
    r = client.get("/monitors/1")
    assert "No verdict yet" in r.text and "Not run yet." in r.text


def test_a_run_from_before_the_first_trace_does_not_speak_over_the_counts(client, make_key, engine):
    """The card's run line says a run older than the data is history, not the run's
    "no tool calls" reason under a panel that counts them."""
    from datetime import timedelta

    from app.models.base import utcnow

    admin = make_key("admin")
    login(client, admin)
    client.post("/monitors/defaults", data={"csrf": csrf(client.get("/").text)})
    h = {"Authorization": f"Bearer {admin}"}
    fm2 = next(
        m
        for m in client.get("/api/v1/monitors", headers=h).json()["monitors"]
        if m["failure_mode"] == "FM-2"
    )
    before = utcnow() - timedelta(minutes=5)
    run = client.post(
        f"/api/v1/monitors/{fm2['id']}/run", headers=h, json={"now": before.isoformat()}
    ).json()
    assert run["status"] == "insufficient_data"
    now_ns = time.time_ns()
    send(client, admin, [agent_run("hello", start=now_ns - 60 * 10**9) for _ in range(3)])
    page = client.get("/").text
    card = re.search(rf'data-monitor="{fm2["id"]}">(.*?)</div>', page, re.S).group(1)
    text = " ".join(re.sub(r"<[^>]+>", " ", card).split())
    assert "That run came before the first trace; the next, due" in text, text
    assert run["evidence"]["reason"] not in text


@sqlite_only
def test_a_trace_sent_this_minute_counts_in_the_last_hour(client, make_key):
    admin = make_key("admin")
    send(client, admin, [agent_run("hello", start=time.time_ns())])
    login(client, admin)
    page = client.get("/").text
    rate = " ".join(
        re.sub(
            r"<[^>]+>", "", re.search(r'id="ingest-rate">(.*?)</p>', page, re.S).group(1)
        ).split()
    )
    assert "last hour: 1 trace" in rate, rate
