"""The issues API (app/api/routes/issues.py): the list by recent impact with its filters,
one issue in full, state changes by annotate or admin keys with their history, a failure
that comes back after it was resolved; on SQLite and PostgreSQL."""

from __future__ import annotations

import typing
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from app.api.routes.issues import State
from app.issues.states import STATES
from app.models import Project
from app.models.base import utcnow
from tests.app.derive.test_derive_job import derive
from tests.app.issues.test_record import NOT_FOUND
from tests.app.issues.traffic import failing_trace, send
from tests.conftest import auth, sqlite_only


def ago(hours: float) -> str:
    return (utcnow() - timedelta(hours=hours)).isoformat()


def traffic() -> list[list[dict[str, Any]]]:
    """get_reservation fails in 3 traces (v1 and v2) in the last hours; cancel failed once,
    30 hours ago (quiet since: resolved); a clean trace of v2."""
    return [
        failing_trace("a", [("get_reservation", "error", NOT_FOUND.format("ZFA04Y"))],
                      version="v1", at=ago(3), user="mia"),
        failing_trace("b", [("get_reservation", "error", NOT_FOUND.format("8JX2WO"))],
                      version="v2", at=ago(2), user="mia"),
        failing_trace("c", [("get_reservation", "error", NOT_FOUND.format("Q1W2E3"))],
                      version="v2", at=ago(1), user="omar"),
        failing_trace("d", [("cancel", "error", "Timeout after 30 s")], version="v1", at=ago(30)),
        failing_trace("e", [("get_reservation", "ok", "")], version="v2", at=ago(1)),
    ]  # fmt: skip


def listed(client: TestClient, key: str, **params: Any) -> list[dict[str, Any]]:
    r = client.get("/api/v1/issues", params=params, headers=auth(key))
    assert r.status_code == 200, r.text
    return list(r.json()["issues"])


def test_the_list_and_one_issue(client: TestClient, make_key: Any, engine: Engine) -> None:
    send(client, make_key("ingest"), traffic())
    derive(engine)
    reader = make_key("read")
    everything = listed(client, reader)
    assert [(i["tool"], i["state"], i["events_24h"], i["events_prev_24h"]) for i in everything] == [
        ("get_reservation", "new", 3, 0), ("cancel", "resolved", 0, 1),
    ]  # fmt: skip
    top = everything[0]
    assert top["title"] == "Error: reservation <ID> not found"
    assert (top["event_count"], top["trace_count"], top["agent"]) == (3, 3, "support")
    assert [i["tool"] for i in listed(client, reader, version="v2")] == ["get_reservation"]
    assert [i["tool"] for i in listed(client, reader, state="resolved")] == ["cancel"]
    assert listed(client, reader, agent="other") == []
    one = client.get(f"/api/v1/issues/{top['id']}", headers=auth(reader)).json()
    assert [(v["version"], v["events"]) for v in one["versions"]] == [("v2", 2), ("v1", 1)]
    assert [e["trace_id"] for e in one["examples"]] == ["c", "b", "a"]
    assert one["examples"][0]["message"] == NOT_FOUND.format("Q1W2E3")
    assert sum(h["events"] for h in one["hours"]) == 3 and len(one["hours"]) == 3
    assert one["share_24h"] == pytest.approx(3 / 4)  # of the agent's 4 traces in 24 h
    assert one["history"] == []
    assert (one["users"], one["sessions"]) == (2, 2)
    assert one["top_users"] == [{"user_id": "mia", "traces": 2}, {"user_id": "omar", "traces": 1}]


def test_people_change_states_and_a_failure_comes_back(client: TestClient, make_key: Any,
                                                       engine: Engine) -> None:  # fmt: skip
    ingest = make_key("ingest")
    send(client, ingest, traffic()[:1])
    derive(engine)
    reader, annotator = make_key("read"), make_key("annotate")
    (issue,) = listed(client, reader)
    path = f"/api/v1/issues/{issue['id']}/state"
    body = {"state": "resolved", "note": "fixed in v3"}
    assert client.post(path, json=body, headers=auth(reader)).status_code == 403
    r = client.post(path, json=body, headers=auth(annotator))
    assert r.status_code == 200 and r.json()["state"] == "resolved", r.text
    assert listed(client, reader, state="new") == []
    # It fails again after it was resolved: regressed, and its history says by whom.
    send(client, ingest, [failing_trace("z", [("get_reservation", "error",
                                                NOT_FOUND.format("7Y7Y7Y"))], at=ago(0))])  # fmt: skip
    derive(engine)
    one = client.get(f"/api/v1/issues/{issue['id']}", headers=auth(reader)).json()
    assert one["state"] == "regressed" and one["event_count"] == 2
    assert [(h["actor"], h["from_state"], h["to_state"], h["note"]) for h in one["history"]] == [
        ("key:3", "new", "resolved", "fixed in v3"),  # the third key made: the annotator
        ("telltale", "resolved", "regressed", None),
    ]  # fmt: skip
    client.post(path, json={"state": "ignored"}, headers=auth(make_key("admin")))
    assert listed(client, reader) == []  # ignored: off the default list
    assert [i["id"] for i in listed(client, reader, state="ignored")] == [issue["id"]]


def test_another_projects_issue_reads_as_missing(client: TestClient, make_key: Any,
                                                 engine: Engine) -> None:  # fmt: skip
    send(client, make_key("ingest"), traffic()[:1])
    derive(engine)
    (issue,) = listed(client, make_key("read"))
    stranger = make_key("admin", project="p2")
    r = client.get(f"/api/v1/issues/{issue['id']}", headers=auth(stranger))
    assert r.status_code == 404 and "issue" in r.json()["detail"]
    r = client.post(f"/api/v1/issues/{issue['id']}/state", json={"state": "muted"},
                    headers=auth(stranger))  # fmt: skip
    assert r.status_code == 404


@sqlite_only
@pytest.mark.parametrize(("method", "path", "body", "field"), [
    ("GET", "/api/v1/issues?state=sleeping", None, "query.state"),
    ("GET", "/api/v1/issues?limit=0", None, "query.limit"),
    ("GET", "/api/v1/issues/0", None, "path.issue_id"),
    ("POST", "/api/v1/issues/1/state", {"state": "new"}, "body.state"),
    ("POST", "/api/v1/issues/1/state", {"state": "muted", "note": "x" * 1001}, "body.note"),
])  # fmt: skip
def test_bad_input_is_a_422_naming_the_field(client: TestClient, make_key: Any, method: str,
                                             path: str, body: Any, field: str) -> None:  # fmt: skip
    r = client.request(method, path, json=body, headers=auth(make_key("admin")))
    assert r.status_code == 422 and r.json()["detail"].startswith(field), r.text


def test_the_api_reads_every_state() -> None:
    assert set(typing.get_args(State)) == set(STATES)


def test_metrics_count_issues_by_state(client: TestClient, make_key: Any, engine: Engine,
                                       settings: Any) -> None:  # fmt: skip
    from sqlalchemy.orm import Session

    from app import metrics_db
    from app.metrics import FAILURE_ISSUES
    from app.models import Project

    send(client, make_key("ingest"), traffic())
    derive(engine)
    with Session(engine) as session:
        metrics_db.refresh(session)
        pid = str(session.scalar(select(Project.id).where(Project.name == "p1")))
    got = {s: FAILURE_ISSUES.labels(project_id=pid, state=s)._value.get() for s in STATES}
    assert got == {**dict.fromkeys(STATES, 0), "new": 1, "resolved": 1}


def test_an_alerts_example_traces_name_their_issues(client: TestClient, make_key: Any,
                                                    engine: Engine) -> None:  # fmt: skip
    from sqlalchemy.orm import Session

    from app.issues.store import issues_among

    send(client, make_key("ingest"), traffic())
    derive(engine)
    with Session(engine) as session:
        pid = session.scalar(select(Project.id).where(Project.name == "p1"))
        named = issues_among(session, project_id=pid, trace_ids=["a", "b", "d", "e"])
    assert [(i["tool"], i["examples"]) for i in named] == [("get_reservation", 2), ("cancel", 1)]
