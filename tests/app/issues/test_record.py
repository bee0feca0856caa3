"""Failure events found at derive time and grouped into issues (app/issues/record.py), on
SQLite and PostgreSQL through native ingest and the derive job."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from app.issues import grouping
from app.models import FailureEvent, FailureIssue, FailureTemplate, Span, Trace
from tests.app.derive.test_derive_job import derive
from tests.app.issues.traffic import failing_trace, send

NOT_FOUND = "Error: reservation {} not found"


def issues(engine: Engine) -> dict[tuple[str, str, str], FailureIssue]:
    with Session(engine) as session:
        return {(i.tool, i.error_type, i.title): i for i in session.scalars(select(FailureIssue))}


def counted_events(engine: Engine) -> dict[int, tuple[int, int]]:
    """Per issue, (events, distinct traces) as the stored events say."""
    with Session(engine) as session:
        rows = session.execute(select(FailureEvent.issue_id, FailureEvent.trace_id)).all()
    out: dict[int, tuple[int, int]] = {}
    for issue_id in {r[0] for r in rows}:
        mine = [r[1] for r in rows if r[0] == issue_id]
        out[issue_id] = (len(mine), len(set(mine)))
    return out


def test_failures_group_by_tool_and_template(client: TestClient, make_key: Any,
                                             engine: Engine) -> None:  # fmt: skip
    send(client, make_key("ingest"), [
        failing_trace("a", [("get_reservation", "error", NOT_FOUND.format("ZFA04Y"))]),
        failing_trace("b", [("get_reservation", "error", NOT_FOUND.format("8JX2WO")),
                            ("get_reservation", "error", NOT_FOUND.format("Q1W2E3"))]),
        # the same words from another tool: another issue
        failing_trace("c", [("cancel_reservation", "error", NOT_FOUND.format("ZFA04Y"))]),
        failing_trace("d", [("get_reservation", "ok", "")] * 3),  # a loop, no error
        failing_trace("e", [("get_reservation", "ok", "")]),
    ])  # fmt: skip
    derive(engine)
    found = issues(engine)
    title = "Error: reservation <ID> not found"
    assert set(found) == {
        ("get_reservation", "ToolError", title),
        ("cancel_reservation", "ToolError", title),
        (
            "get_reservation",
            "ToolLoop",
            "get_reservation called <NUM> times with the same arguments",
        ),
    }
    reservation = found[("get_reservation", "ToolError", title)]
    # The failing agent span around the tool calls failed because they did: not an event.
    assert (reservation.event_count, reservation.trace_count) == (3, 2)
    assert reservation.span_kind == "tool" and reservation.agent == "support"
    assert counted_events(engine)[reservation.id] == (3, 2)


def test_deriving_again_never_counts_twice_and_ids_survive_a_restart(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key = make_key("ingest")
    send(client, key, [failing_trace(t, [("get_reservation", "error", NOT_FOUND.format(t + "1X"))])
                       for t in ("a", "b")])  # fmt: skip
    derive(engine)
    before = {i.id: (i.event_count, i.trace_count) for i in issues(engine).values()}
    with engine.begin() as conn:  # both traces queued again, as a late span would
        conn.execute(update(Trace).values(derived_at=None))
    assert derive(engine).traces == 2
    after = {i.id: (i.event_count, i.trace_count) for i in issues(engine).values()}
    assert after == before == {i: c for i, c in counted_events(engine).items()}
    # A restart: the miner is rebuilt from the stored templates; a new id joins the issue.
    grouping.forget()
    send(
        client, key, [failing_trace("c", [("get_reservation", "error", NOT_FOUND.format("77ZZ"))])]
    )
    derive(engine)
    (issue,) = issues(engine).values()
    assert issue.id in before and (issue.event_count, issue.trace_count) == (3, 3)
    with Session(engine) as session:
        assert (
            session.scalar(select(FailureTemplate.template)) == "Error: reservation <ID> not found"
        )


def test_a_trace_that_loses_its_failure_leaves_the_count(client: TestClient, make_key: Any,
                                                         engine: Engine) -> None:  # fmt: skip
    key = make_key("ingest")
    send(client, key, [failing_trace("a", [("lookup", "error", "Timeout after 30 s")])])
    derive(engine)
    # Its tool call turns out fine (a corrected span): the trace is derived again.
    with engine.begin() as conn:
        conn.execute(update(Span).values(status="ok"))
        conn.execute(update(Trace).values(derived_at=None))
    derive(engine)
    (issue,) = issues(engine).values()
    assert (issue.event_count, issue.trace_count) == (0, 0)
    assert counted_events(engine) == {}


def test_a_trace_the_derive_job_sets_aside_is_an_event(
    client: TestClient, make_key: Any, engine: Engine, monkeypatch: Any
) -> None:
    from app.derive import job

    def broken(*args: Any) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    send(client, make_key("ingest"), [failing_trace("a", [("lookup", "ok", "")])])
    monkeypatch.setattr(job, "derive_trace", broken)
    derive(engine)
    (issue,) = issues(engine).values()
    assert (issue.span_kind, issue.error_type, issue.title) == (
        "derive", "RecursionError", "maximum recursion depth exceeded")  # fmt: skip
    assert issue.event_count == 1


def test_a_widened_template_retitles_every_issue_of_it(client: TestClient, make_key: Any,
                                                       engine: Engine) -> None:  # fmt: skip
    key = make_key("ingest")
    send(client, key, [failing_trace("a", [("orders", "error", "Error: order alpha not found")])])
    derive(engine)
    send(client, key, [failing_trace("b", [("refunds", "error", "Error: order beta not found")])])
    derive(engine)
    titles = {tool: title for tool, _, title in issues(engine)}
    assert titles == {
        "orders": "Error: order <*> not found",
        "refunds": "Error: order <*> not found",
    }


def test_an_agent_that_raises_on_its_own_is_an_event(client: TestClient, make_key: Any,
                                                     engine: Engine) -> None:  # fmt: skip
    events = failing_trace("a", [("lookup", "ok", "")])
    root = next(e for e in events if e["body"].get("span_id") == "root")
    root["body"].update(status="error", error_type="KeyError",
                        attributes={"otel.status_message": "KeyError: 'order_id'"})  # fmt: skip
    send(client, make_key("ingest"), [events])
    derive(engine)
    (issue,) = issues(engine).values()
    assert (issue.span_kind, issue.tool, issue.error_type, issue.title) == (
        "agent", "", "KeyError", "KeyError: 'order_id'")  # fmt: skip
