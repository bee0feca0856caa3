"""Tool loops found at derive time (app/derive/loops.py), stored on the trace, filtered by the
API and shown on the pages; on SQLite and PostgreSQL through native ingest."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.derive.loops import normalised_arguments, tool_loop
from app.models import Trace
from app.monitors.windows.rows import chunk_records
from tests.app.derive.test_derive_job import derive
from tests.conftest import auth
from tests.web.test_pages import login

ARGS = '{"order_id": 42, "fields": ["status"]}'


def _trace(trace_id: str, calls: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """A trace of one agent: before each tool call (name, arguments, status) an LLM call
    that asked for it (100 tokens, $0.01), then a final LLM call."""
    events: list[dict[str, Any]] = [{
        "id": f"trace-{trace_id}", "type": "trace",
        "body": {"trace_id": trace_id, "agent": "support", "started_at": "2026-11-29T10:00:00Z",
                 "ended_at": "2026-11-29T10:01:00Z"},
    }]  # fmt: skip
    step = 0

    def span(kind: str, **body: Any) -> None:
        nonlocal step
        events.append({"id": f"span-{trace_id}-{step}", "type": "span", "body": {
            "trace_id": trace_id, "span_id": f"s{step}", "kind": kind, "step_index": step,
            "name": body.pop("name", kind), **body,
        }})  # fmt: skip
        step += 1

    for name, arguments, status in calls:
        span("llm", input_tokens=60, output_tokens=40, cost=0.01, request_model="m")
        span("tool", name=name, tool_name=name, status=status,
             attributes={"gen_ai.tool.call.arguments": arguments})  # fmt: skip
    span("llm", input_tokens=60, output_tokens=40, cost=0.01, request_model="m")
    return events


def _send(client: TestClient, key: str, traces: dict[str, list[tuple[str, str, str]]]) -> None:
    events = [e for tid, calls in traces.items() for e in _trace(tid, calls)]
    r = client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
    assert r.status_code == 200, r.text


TRACES = {
    "three": [("lookup_order", ARGS, "ok")] * 3,
    "two": [("lookup_order", ARGS, "ok")] * 2,
    # the same call failing, retried unchanged twice
    "retried": [("refund", '{"id": 7}', "error")] * 3,
    # one failure retried once, unchanged: a retry that cannot succeed
    "retried_once": [("refund", '{"id": 7}', "error"), ("refund", '{"id": 7}', "ok")],
    # the arguments differ by whitespace (and key order) only
    "spaced": [
        ("lookup_order", ARGS, "ok"),
        ("lookup_order", ' {"fields":["status"],\n"order_id":42} ', "ok"),
        ("lookup_order", ARGS.replace(" ", ""), "ok"),
    ],
    "varied": [
        ("lookup_order", '{"order_id": 1}', "ok"),
        ("lookup_order", '{"order_id": 2}', "ok"),
        ("lookup_order", '{"order_id": 3}', "ok"),
    ],
    "none": [],
}


def test_loops_are_derived_and_stored(client: TestClient, make_key: Any, engine: Engine) -> None:
    _send(client, make_key("ingest"), TRACES)
    derive(engine)
    with Session(engine) as session:
        rows = {t.trace_id: t for t in session.scalars(select(Trace))}
    got = {tid: (t.loop_tool, t.loop_calls) for tid, t in rows.items()}
    assert got == {
        "three": ("lookup_order", 3),
        "two": (None, 2),
        "retried": ("refund", 3),
        "retried_once": ("refund", 2),
        "spaced": ("lookup_order", 3),
        "varied": (None, 1),
        "none": (None, 0),
    }
    # Wasted: the 2 repeats and the 2 LLM calls between the first and the last call.
    assert rows["three"].attributes["telltale.loop"] == {
        "wasted_calls": 2, "wasted_tokens": 200, "wasted_cost": 0.02,
    }  # fmt: skip
    assert "telltale.loop" not in rows["two"].attributes


def test_the_api_filters_on_loops(client: TestClient, make_key: Any, engine: Engine) -> None:
    _send(client, make_key("ingest"), TRACES)
    derive(engine)
    reader = make_key("read")

    def listed(**params: Any) -> set[str]:
        page = client.get("/api/v1/traces", params=params, headers=auth(reader))
        assert page.status_code == 200, page.text
        return {t["trace_id"] for t in page.json()["traces"]}

    looping = {"three", "retried", "retried_once", "spaced"}
    assert listed(loop="true") == looping
    assert listed(loop="false") == set(TRACES) - looping
    assert len(listed()) == len(TRACES)
    one = client.get("/api/v1/traces/three", headers=auth(reader)).json()
    assert (one["loop_tool"], one["loop_calls"]) == ("lookup_order", 3)


def test_the_pages_show_the_loop(client: TestClient, make_key: Any, engine: Engine) -> None:
    _send(client, make_key("ingest"), {k: TRACES[k] for k in ("three", "two")})
    derive(engine)
    login(client, make_key("read"))
    listed = client.get("/traces").text
    assert listed.count('class="badge firing loop"') == 1
    only = client.get("/traces", params={"loop": "true"}).text
    assert "/traces/three" in only and "/traces/two" not in only
    page = client.get("/traces/three").text
    assert "lookup_order called 3 times with the same arguments" in page
    assert "loop</span>" in page
    assert "loop</span>" not in client.get("/traces/two").text


def test_normalised_arguments_and_wasted_counts_without_cost() -> None:
    assert normalised_arguments({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'
    assert normalised_arguments("find  me\t now ") == "find me now"
    spans = [
        {"span_id": "a", "kind": "tool", "name": "search", "attributes": {"input.value": "x"}},
        {"span_id": "b", "kind": "llm", "input_tokens": 10},
        {"span_id": "c", "kind": "tool", "name": "search", "attributes": {"input.value": " x"}},
        {"span_id": "d", "kind": "llm"},
        {"span_id": "e", "kind": "tool", "name": "search", "attributes": {"input.value": "x "}},
    ]
    found = tool_loop(spans, priced={"d": 0.5})
    assert (found.tool, found.calls, found.wasted_calls) == ("search", 3, 2)
    assert (found.wasted_tokens, found.wasted_cost) == (10, 0.5)
    assert found.sentence() == "search called 3 times with the same arguments"
    assert tool_loop(spans[:3]).tool is None  # two calls that did not fail


def test_the_monitors_read_loops_into_records(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    _send(client, make_key("ingest"), {k: TRACES[k] for k in ("three", "two")})
    with Session(engine) as session:
        pid = session.scalars(select(Trace.project_id)).first()
        before = chunk_records(session, ["three"], project_id=pid, as_of=None, scores=False)
    assert (before[0].loop_calls, before[0].has_loop) == (None, False)  # not derived yet
    derive(engine)
    with Session(engine) as session:
        recs = chunk_records(session, ["three", "two"], project_id=pid, as_of=None)
    got = {r.trace_id: (r.loop_tool, r.loop_calls, r.has_loop) for r in recs}
    assert got == {"three": ("lookup_order", 3, True), "two": (None, 2, False)}


def test_calls_sent_without_arguments_are_no_loop() -> None:
    """Three lookups of different reservations whose spans carry no arguments (an
    instrumentation that does not record them) are not one call made three times; with
    their arguments recorded as empty, three calls of a tool that takes none are."""
    bare = [{"span_id": str(i), "kind": "tool", "name": "get_reservation", "attributes": {}}
            for i in range(3)]  # fmt: skip
    assert tool_loop(bare).tool is None and tool_loop(bare).calls == 0
    empty = [{**s, "attributes": {"gen_ai.tool.call.arguments": "{}"}} for s in bare]
    assert tool_loop(empty).tool == "get_reservation"
