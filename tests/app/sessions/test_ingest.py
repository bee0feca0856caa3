"""A trace's session and user at ingest: every convention's key, span before resource, the
root's before the others' in any arrival order, the native fields; on both databases."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from app.models import Trace
from app.otlp.decode import DecodedSpan
from app.otlp.mapping import map_spans
from tests.app.derive.otlp_agent import agent_run, send
from tests.conftest import auth, sqlite_only


def span(span_id: str, attrs: dict[str, Any], *, parent: str | None = "r0",
         resource: dict[str, Any] | None = None) -> DecodedSpan:  # fmt: skip
    return DecodedSpan(
        trace_id="t1", span_id=span_id, parent_span_id=parent, name="s", kind=1,
        start_ns=10**18 + int(span_id[1:]), end_ns=10**18 + 10**9, status_code=0,
        status_message="", attributes=attrs, resource=resource or {}, scope="",
    )  # fmt: skip


def ids(*spans: DecodedSpan) -> tuple[Any, Any]:
    (row,) = map_spans(list(spans)).traces
    return row["session_id"], row["user_id"]


@pytest.mark.parametrize(
    ("attrs", "want"),
    [
        ({"gen_ai.conversation.id": "c1", "user.id": "u1"}, ("c1", "u1")),  # OTel GenAI
        ({"session.id": "c1", "user.id": "u1"}, ("c1", "u1")),  # OpenInference, Langfuse
        ({"langfuse.session.id": "c1", "langfuse.user.id": "u1"}, ("c1", "u1")),
        ({"traceloop.association.properties.session_id": "c1",
          "traceloop.association.properties.user_id": "u1"}, ("c1", "u1")),  # OpenLLMetry
        ({"enduser.id": "u1"}, (None, "u1")),  # OTel before semantic conventions 1.26
        ({"gen_ai.request.user": "u1"}, (None, "u1")),  # OpenLIT: the OpenAI request's user
        ({"gen_ai.user": "u1"}, (None, "u1")),  # OpenLLMetry: the same
        ({"session.id": "c1", "gen_ai.conversation.id": "c2"}, ("c1", None)),  # first key wins
        ({"user.id": 42, "session.id": ""}, (None, "42")),  # an integer is its text
        ({"user.id": True, "session.id": ["a"]}, (None, None)),  # neither is an id
        ({"session.id": "x" * 300}, ("x" * 128, None)),  # cut as every trace field is
    ],
)  # fmt: skip
def test_each_conventions_keys(attrs, want):
    assert ids(span("r0", attrs, parent=None)) == want


def test_a_spans_own_value_beats_its_resources_and_the_root_beats_the_others():
    resource = {"session.id": "from-resource", "user.id": "resource-user"}
    assert ids(span("r0", {}, parent=None, resource=resource)) == ("from-resource", "resource-user")
    assert ids(span("r0", {"session.id": "own"}, parent=None, resource=resource)) == (
        "own", "resource-user",
    )  # fmt: skip
    # The root's value wins wherever it comes in the request; a child fills a gap.
    child = span("c1", {"session.id": "child", "user.id": "child-user"})
    root = span("r0", {"session.id": "root"}, parent=None)
    assert ids(child, root) == ids(root, child) == ("root", "child-user")


def stored(engine, trace_id: str) -> tuple[Any, Any]:
    with engine.connect() as conn:
        row = conn.execute(
            select(Trace.session_id, Trace.user_id).where(Trace.trace_id == trace_id)
        ).one()
    return tuple(row)


def test_otlp_requests_in_any_order_keep_the_roots_session(client, make_key, engine):
    key = make_key("ingest")
    run = agent_run("Where is my order?", tools=("lookup_order",),
                    root_attributes={"gen_ai.conversation.id": "conv-root"})  # fmt: skip
    root, *children = run.spans
    children[0]["attributes"].append({"key": "session.id", "value": {"stringValue": "conv-child"}})
    children[1]["attributes"].append({"key": "user.id", "value": {"stringValue": "u-7"}})
    run.spans = children
    send(client, key, [run])  # the children first: their values fill the gap
    assert stored(engine, run.trace_id) == ("conv-child", "u-7")
    run.spans = [root]
    send(client, key, [run])  # then the root: its session wins, the user stays
    assert stored(engine, run.trace_id) == ("conv-root", "u-7")
    run.spans = children
    send(client, key, [run])  # children sent again change nothing
    assert stored(engine, run.trace_id) == ("conv-root", "u-7")


def test_otlp_resource_attributes_name_the_session_and_user(client, make_key, engine):
    run = agent_run("hi", resource={"session.id": "res-conv", "enduser.id": "res-user"})
    send(client, make_key("ingest"), [run])
    assert stored(engine, run.trace_id) == ("res-conv", "res-user")


def native(trace_id: str, **body: Any) -> dict[str, Any]:
    return {"id": f"t-{trace_id}-{len(body)}", "type": "trace",
            "body": {"trace_id": trace_id, "agent": "bot", **body}}  # fmt: skip


def test_native_fields_then_attributes_and_a_later_piece_keeps_them(client, make_key, engine):
    key = make_key("ingest")
    events = [
        native("a", session_id="s-a", user_id="u-a", attributes={"session.id": "ignored"}),
        native("b", attributes={"gen_ai.conversation.id": "s-b", "user.id": 7}),
        native("c", session_id=12),
        native("d"),
    ]
    r = client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
    assert r.status_code == 200 and r.json()["accepted"] == 4, r.text
    assert [stored(engine, t) for t in "abcd"] == [
        ("s-a", "u-a"), ("s-b", "7"), ("12", None), (None, None),
    ]  # fmt: skip
    # A later piece of trace "a" without them keeps what is stored; one with them sets them.
    later = [native("a", status="error"), native("d", user_id="u-d")]
    r = client.post("/api/v1/ingest", json={"events": later}, headers=auth(key))
    assert r.status_code == 200 and r.json()["accepted"] == 2, r.text
    assert stored(engine, "a") == ("s-a", "u-a") and stored(engine, "d") == (None, "u-d")


@sqlite_only  # refused at the door: no database behaviour in it
def test_native_fields_over_128_characters_are_refused_by_name(client, make_key):
    events = [native("a", session_id="x" * 129), native("b", user_id=["u"]), native("c")]
    r = client.post("/api/v1/ingest", json={"events": events}, headers=auth(make_key("ingest")))
    assert r.status_code == 200 and r.json()["accepted"] == 1, r.text
    errors = [e["error"] for e in r.json()["rejected"]]
    assert errors == [
        "events[0].body.session_id: must be at most 128 characters",
        "events[1].body.user_id: must be a string, not list",
    ]
