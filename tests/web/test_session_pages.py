"""The sessions pages without a browser, as a person reads them: the list, one session as the
whole conversation turn by turn (each message once, each turn linked to its trace, with its
failure and scores), the traces list's session and user filters, the trace page's link."""

from __future__ import annotations

import html as htmllib
import re
from typing import Any

from tests.app.derive.otlp_agent import T0, send
from tests.app.sessions.turns import SEC, turns
from tests.conftest import auth, sqlite_only
from tests.web.test_pages import login
from tests.web.test_trace_page import chat


def text(fragment: str) -> str:
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def conversation(client, make_key) -> dict[str, Any]:
    key = make_key("ingest")
    refund = turns([("I want a refund", "Which order?"), ("Order 42", ""),
                    ("Order 42, please", "Refunded.")], failing=(1,),
                   ids={"gen_ai.conversation.id": "refund/42", "user.id": "u-1"})  # fmt: skip
    other = turns([("Where is my parcel?", "On its way.")], start=T0 + 3600 * SEC,
                  ids={"session.id": "shipping", "user.id": "u-2"})  # fmt: skip
    send(client, key, refund + other)
    score = {"id": "sc-1", "type": "score", "body": {"trace_id": refund[2].trace_id,
             "name": "resolved", "value": 1.0, "kind": "true", "source": "delayed"}}  # fmt: skip
    r = client.post("/api/v1/ingest", json={"events": [score]}, headers=auth(key))
    assert r.status_code == 200 and r.json()["accepted"] == 1, r.text
    login(client, make_key("read"))
    return {"refund": refund, "other": other}


def rows(page: str, table_id: str) -> list[list[str]]:
    body = re.search(rf'<table [^>]*id="{table_id}">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert body is not None, page
    return [[text(td) for td in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
            for tr in re.findall(r"<tr>(.*?)</tr>", body.group(1), re.S)]  # fmt: skip


def test_the_sessions_list_and_a_session_read_as_one_conversation(client, make_key):
    w = conversation(client, make_key)
    page = client.get("/sessions").text
    assert rows(page, "sessions") == [
        ["shipping", "u-2", "1", "0", "2025-12-01 12:53:20", "2025-12-01 12:53:20",
         "support-agent", ""],
        ["refund/42", "u-1", "3", "1", "2025-12-01 11:53:20", "2025-12-01 11:55:20",
         "support-agent", "resolved 1"],
    ]  # fmt: skip
    assert 'href="/sessions/refund/42"' in page
    assert "Sessions</a>" in page  # in the navigation

    page = client.get("/sessions/refund/42").text
    meta = text(re.search(r'<p class="muted session-meta">(.*?)</p>', page, re.S).group(1))
    assert meta.startswith("user u-1 · 3 turns · 1 failed · 2025-12-01 11:53:20 to"), meta
    assert "Outcome: resolved 1" in text(page)
    turns_list = page.split('<ol class="turns" id="turns">', 1)[1]
    parts = re.findall(r'<li class="card turn[^"]*" id="turn-(\d)">(.*?)(?=<li class="card turn|$)',
                       turns_list, re.S)  # fmt: skip
    assert [n for n, _ in parts] == ["1", "2", "3"]
    said = [chat(body) for _, body in parts]
    # Each turn adds only what is new: the history its model call repeats is not shown again.
    assert said[0] == [("system", "system You are a support agent."),
                       ("user", "user I want a refund"), ("assistant", "assistant gpt-4o-mini Which order?")]  # fmt: skip
    assert said[1] == [("user", "user Order 42")]
    assert said[2] == [("user", "user Order 42, please"),
                       ("assistant", "assistant gpt-4o-mini Refunded.")]  # fmt: skip
    for (_, body), run in zip(parts, w["refund"], strict=True):
        assert f'href="/traces/{run.trace_id}"' in body
    assert "Failed: llm chat gpt-4o-mini: openai.InternalServerError" in text(parts[1][1])
    assert 'class="badge firing">error' in parts[1][1]
    assert "Scores: resolved 1 true, label" in text(parts[2][1])


def test_the_traces_list_filters_by_session_and_user_and_a_trace_links_its_session(
    client, make_key
):
    w = conversation(client, make_key)
    page = client.get("/traces", params={"session": "refund/42"}).text
    listed = re.findall(r'<a href="/traces/([0-9a-f]+)">', page)
    assert sorted(listed) == sorted(run.trace_id for run in w["refund"])
    assert 'value="refund/42"' in page  # the filter keeps what was typed
    page = client.get("/traces", params={"user": "u-2"}).text
    assert re.findall(r'<a href="/traces/([0-9a-f]+)">', page) == [w["other"][0].trace_id]
    assert "user u-2" in text(page)
    page = client.get(f"/traces/{w['refund'][1].trace_id}").text
    link = re.search(r'<p class="trace-session">(.*?)</p>', page, re.S).group(1)
    assert text(link) == "Turn 2 of 3 in session refund/42 · user u-1"
    assert 'href="/sessions/refund/42#turn-2"' in link


def test_a_project_without_sessions_is_taught_how_to_send_them(client, make_key):
    login(client, make_key("read"))
    page = client.get("/sessions").text
    empty = text(re.search(r'<section class="card" id="no-sessions">(.*?)</section>', page, re.S)
                 .group(1))  # fmt: skip
    assert "gen_ai.conversation.id" in empty and "using_session(session_id)" in empty
    assert client.get("/sessions/nope").status_code == 404


@sqlite_only  # refused while the parameters are read
def test_other_projects_and_bad_cursors(client, make_key):
    send(client, make_key("ingest", project="p2"),
         turns([("Hi", "Hello.")], ids={"session.id": "theirs"}))  # fmt: skip
    login(client, make_key("read"))
    assert client.get("/sessions/theirs").status_code == 404
    assert "theirs" not in client.get("/sessions").text
    r = client.get("/sessions", params={"cursor": "%%%"})
    assert r.status_code == 422 and "cursor: not a cursor" in r.text
