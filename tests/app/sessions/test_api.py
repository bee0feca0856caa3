"""``/api/v1/sessions`` and the traces list's session and user filters, on both databases:
figures over all turns, latest activity first, keyset pages, one project only, 422s."""

from __future__ import annotations

from typing import Any

from tests.app.derive.otlp_agent import T0, send
from tests.app.sessions.turns import SEC, turns
from tests.conftest import auth, sqlite_only

HOUR = 3600 * SEC


def score(trace_id: str, name: str, value: float, kind: str, n: int) -> dict[str, Any]:
    return {"id": f"sc-{trace_id}-{name}-{n}", "type": "score",
            "body": {"trace_id": trace_id, "name": name, "value": value, "kind": kind,
                     "source": "delayed"}}  # fmt: skip


def world(client, make_key) -> dict[str, Any]:
    """Project p1: "refund" (3 turns of u-1, the 2nd failed, a resolved score on the 3rd),
    "shipping" (1 turn of u-2, an hour later) and one trace without a session; project
    p2: a session of its own, named "refund" too."""
    key = make_key("ingest")
    refund = turns([("I want a refund", "Which order?"), ("Order 42", ""),
                    ("Order 42, please", "Refunded.")], failing=(1,),
                   ids={"gen_ai.conversation.id": "refund", "user.id": "u-1"})  # fmt: skip
    shipping = turns([("Where is my parcel?", "On its way.")], start=T0 + HOUR,
                     ids={"session.id": "shipping", "user.id": "u-2"})  # fmt: skip
    loose = turns([("Hello", "Hi.")], start=T0 + 2 * HOUR, ids={})
    send(client, key, refund + shipping + loose)
    scores = [score(refund[2].trace_id, "resolved", 1.0, "true", 1),
              score(refund[2].trace_id, "helpful", 0.4, "proxy", 2),
              score(refund[0].trace_id, "resolved", 0.0, "true", 3)]  # fmt: skip
    r = client.post("/api/v1/ingest", json={"events": scores}, headers=auth(key))
    assert r.status_code == 200 and r.json()["accepted"] == 3, r.text
    other = turns([("Elsewhere", "Yes.")], start=T0 + 3 * HOUR,
                  ids={"session.id": "refund", "user.id": "u-9"})  # fmt: skip
    send(client, make_key("ingest", project="p2"), other)
    return {"refund": refund, "shipping": shipping, "loose": loose, "other": other,
            "read": make_key("read"), "read2": make_key("read", project="p2")}  # fmt: skip


def test_sessions_list_and_one_session_with_its_turns(client, make_key):
    w = world(client, make_key)
    r = client.get("/api/v1/sessions", headers=auth(w["read"]))
    assert r.status_code == 200, r.text
    page = r.json()
    assert [s["session_id"] for s in page["sessions"]] == ["shipping", "refund"]
    assert page["next_cursor"] is None
    refund = page["sessions"][1]
    assert {k: refund[k] for k in ("user_id", "turns", "errors", "agents")} == {
        "user_id": "u-1", "turns": 3, "errors": 1, "agents": ["support-agent"],
    }  # fmt: skip
    assert refund["first_seen"] < refund["last_seen"]
    assert refund["first_seen"].startswith("2025-12-01T11:53:20")  # T0, the first turn's start
    # The latest score read as a true objective: the 3rd turn's resolved, not the proxy.
    assert {k: refund["outcome"][k] for k in ("name", "value", "trace_id")} == {
        "name": "resolved", "value": 1.0, "trace_id": w["refund"][2].trace_id,
    }  # fmt: skip
    assert page["sessions"][0]["outcome"] is None

    r = client.get("/api/v1/sessions/refund", headers=auth(w["read"]))
    assert r.status_code == 200, r.text
    detail = r.json()
    assert [t["trace_id"] for t in detail["traces"]] == [run.trace_id for run in w["refund"]]
    assert [t["status"] for t in detail["traces"]] == ["ok", "error", "ok"]
    assert {t["session_id"] for t in detail["traces"]} == {"refund"}
    assert [sorted(s["name"] for s in t["scores"]) for t in detail["traces"]] == [
        ["resolved"], [], ["helpful", "resolved"],
    ]  # fmt: skip
    assert detail["turns"] == 3 and detail["next_cursor"] is None

    # Project p2 sees its own "refund" only; p1's reader never sees p2's.
    r = client.get("/api/v1/sessions/refund", headers=auth(w["read2"]))
    assert [t["trace_id"] for t in r.json()["traces"]] == [w["other"][0].trace_id]
    assert r.json()["user_id"] == "u-9"
    r = client.get("/api/v1/sessions", headers=auth(w["read2"]))
    assert [s["session_id"] for s in r.json()["sessions"]] == ["refund"]
    r = client.get("/api/v1/sessions/nope", headers=auth(w["read"]))
    assert r.status_code == 404 and r.json()["detail"] == "session 'nope' not found in this project"


def test_pages_of_sessions_and_of_turns_and_the_filters(client, make_key):
    w = world(client, make_key)
    h = auth(w["read"])
    first = client.get("/api/v1/sessions", params={"limit": 1}, headers=h).json()
    assert [s["session_id"] for s in first["sessions"]] == ["shipping"]
    second = client.get("/api/v1/sessions", params={"limit": 1, "cursor": first["next_cursor"]},
                        headers=h).json()  # fmt: skip
    assert [s["session_id"] for s in second["sessions"]] == ["refund"]
    assert second["next_cursor"] is None
    by_user = client.get("/api/v1/sessions", params={"user_id": "u-1"}, headers=h).json()
    assert [s["session_id"] for s in by_user["sessions"]] == ["refund"]
    later = client.get("/api/v1/sessions", params={"since": "2025-12-01T12:30:00Z"}, headers=h)
    assert [s["session_id"] for s in later.json()["sessions"]] == ["shipping"]

    seen, cursor = [], None
    while True:
        params: dict[str, Any] = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        got = client.get("/api/v1/sessions/refund", params=params, headers=h).json()
        seen += [t["trace_id"] for t in got["traces"]]
        assert got["turns"] == 3  # the figures are the whole session's on every page
        cursor = got["next_cursor"]
        if cursor is None:
            break
    assert seen == [run.trace_id for run in w["refund"]]

    def trace_ids(**params: str) -> list[str]:
        r = client.get("/api/v1/traces", params=params, headers=h)
        assert r.status_code == 200, r.text
        return sorted(t["trace_id"] for t in r.json()["traces"])

    assert trace_ids(session_id="refund") == sorted(run.trace_id for run in w["refund"])
    assert trace_ids(user_id="u-2") == [w["shipping"][0].trace_id]
    assert trace_ids(user_id="u-9") == []  # p2's user
    listed = client.get("/api/v1/traces", params={"user_id": "u-2"}, headers=h).json()["traces"]
    assert (listed[0]["session_id"], listed[0]["user_id"]) == ("shipping", "u-2")


@sqlite_only  # refused while the parameters are read: no database behaviour in it
def test_bad_parameters_are_422s_naming_the_field(client, make_key):
    h = auth(make_key("read"))
    for path, params, field in [
        ("/api/v1/sessions", {"limit": 0}, "query.limit"),
        ("/api/v1/sessions", {"cursor": "not-a-cursor"}, "query.cursor"),
        ("/api/v1/sessions", {"since": "yesterday"}, "query.since"),
        ("/api/v1/sessions", {"user_id": "u" * 129}, "query.user_id"),
        ("/api/v1/sessions/s", {"limit": 501}, "query.limit"),
        ("/api/v1/sessions/" + "s" * 129, {}, "path.session_id"),
        ("/api/v1/traces", {"session_id": "s" * 129}, "query.session_id"),
    ]:
        r = client.get(path, params=params, headers=h)
        assert r.status_code == 422, (path, params, r.text)
        assert r.json()["detail"].startswith(f"{field}:"), r.json()
    assert client.get("/api/v1/sessions").status_code == 401
    ingest_only = auth(make_key("ingest"))
    assert client.get("/api/v1/sessions", headers=ingest_only).status_code == 403
