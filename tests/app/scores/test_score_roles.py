"""Score roles per project: the API, and roles applied when monitor windows are read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Project
from app.monitors.windows import trace_window as windows
from app.scores import roles as score_roles
from app.scores.schemas import DEFAULT_LABEL_SOURCES
from detectors.proxy_convergence.objectives import objective_kinds
from detectors.records import LABEL_SOURCES
from tests.conftest import auth

NOW = datetime(2026, 11, 2, 12, tzinfo=UTC)
ROLES = "/api/v1/project/score-roles"


def test_defaults_validation_and_round_trip(client, make_key):
    admin, reader = make_key(role="admin"), make_key(role="read")
    assert client.get(ROLES, headers=auth(admin)).json() == {
        "roles": {},
        "label_sources": ["delayed", "human"],
    }
    assert tuple(DEFAULT_LABEL_SOURCES) == LABEL_SOURCES
    body = {"roles": {"helpfulness": "proxy", "resolved": "true", "toxicity": "guardrail"}}
    assert client.put(ROLES, headers=auth(reader), json=body).status_code == 403
    assert client.get(ROLES, headers=auth(reader)).status_code == 403
    for bad, field in [
        ({"roles": {"helpfulness": "judge"}}, "body.roles.helpfulness"),
        ({"roles": {"": "true"}}, "body.roles"),
        ({"label_sources": ["delayed", "crowd"]}, "body.label_sources.1"),
        ({"roles": {}, "labels": ["human"]}, "body.labels"),
        ({"roles": {"a\x00": "true"}}, "roles.a"),
    ]:
        r = client.put(ROLES, headers=auth(admin), json=bad)
        assert r.status_code == 422, (bad, r.text)
        assert field in r.json()["detail"], (bad, r.json())
    r = client.put(ROLES, headers=auth(admin), json={**body, "label_sources": ["human", "online"]})
    assert r.status_code == 200, r.text
    want = {**body, "label_sources": ["human", "online"]}
    assert r.json() == want
    assert client.get(ROLES, headers=auth(admin)).json() == want
    # Another project keeps the defaults.
    other = make_key(role="admin", project="p2")
    assert client.get(ROLES, headers=auth(other)).json()["roles"] == {}


def _ingest(client: Any, key: str) -> None:
    """80 traces over 8 h, each with an LLM-judge score and a ticket outcome, both sent the
    way OTLP evaluation results arrive (proxy, online)."""
    events: list[dict[str, Any]] = []
    start = NOW - timedelta(hours=8)
    for i in range(80):
        t = start + timedelta(minutes=6 * i)
        tid = f"t{i:03d}"
        events.append(
            {
                "id": f"trace-{tid}",
                "type": "trace",
                "body": {
                    "trace_id": tid,
                    "agent": "support",
                    "started_at": t.isoformat(),
                    "ended_at": (t + timedelta(seconds=5)).isoformat(),
                    "attributes": {"confidence": 0.5 + (i % 5) / 10},
                },
            }
        )
    assert (
        client.post("/api/v1/ingest", headers=auth(key), json={"events": events}).status_code == 200
    )
    scores = [
        {"trace_id": f"t{i:03d}", "name": name, "value": value, "event_id": f"{name}-{i}",
         "created_at": (start + timedelta(minutes=6 * i, seconds=30)).isoformat()}
        for i in range(80)
        for name, value in (("helpfulness", 0.6 + (i % 4) / 10), ("resolved", float(i % 3 != 0)))
    ]  # fmt: skip
    r = client.post("/api/v1/scores", headers=auth(key), json={"scores": scores})
    assert r.status_code == 200 and r.json()["accepted"] == 160, r.text


def _pid(engine: Any) -> int:
    with Session(engine) as session:
        return int(session.scalars(select(Project.id).where(Project.name == "p1")).one())


def _window(engine: Any, roles: score_roles.ScoreRoles) -> list[Any]:
    with Session(engine) as session:
        sel = windows.TraceSelection(project_id=_pid(engine), roles=roles)
        return windows.load_trace_records(session, sel, start=NOW - timedelta(hours=8), end=NOW)


def test_a_role_change_rereads_the_same_stored_scores(client, make_key, engine):
    admin = make_key(role="admin")
    _ingest(client, admin)
    with Session(engine) as session:
        before = score_roles.get_roles(session, project_id=_pid(engine))
    recs = _window(engine, before)
    assert len(recs) == 80
    # As sent: both proxies, no label anywhere (FM-7 has no true objective, FM-4 no labels).
    assert objective_kinds(recs) == {"helpfulness": "proxy", "resolved": "proxy"}
    assert not any(r.label for r in recs)
    body = {"roles": {"resolved": "true"}, "label_sources": ["delayed", "human", "online"]}
    assert client.put(ROLES, headers=auth(admin), json=body).status_code == 200
    with Session(engine) as session:
        after = score_roles.get_roles(session, project_id=_pid(engine))
    recs = _window(engine, after)
    assert objective_kinds(recs) == {"helpfulness": "proxy", "resolved": "true"}
    assert all(r.label is not None and r.label.name == "resolved" for r in recs)
    # A true role alone does not make labels: online is not a label source by default.
    only_role = score_roles.ScoreRoles.from_mapping({"resolved": "true"}, LABEL_SOURCES)
    assert not any(r.label for r in _window(engine, only_role))


def test_fm4_run_sees_labels_only_after_the_role_change(client, make_key):
    admin = make_key(role="admin")
    _ingest(client, admin)
    # The project's first trace 41 h back: FM-4 gives no verdict before 40 h of data.
    first = {"trace_id": "first", "agent": "support",
             "started_at": (NOW - timedelta(hours=41)).isoformat()}  # fmt: skip
    events = [{"id": "trace-first", "type": "trace", "body": first}]
    assert client.post("/api/v1/ingest", headers=auth(admin), json={"events": events}).is_success
    monitors = client.post("/api/v1/monitors/defaults", headers=auth(admin), json={}).json()
    fm4 = next(m for m in monitors["monitors"] if m["failure_mode"] == "FM-4")

    def coverage() -> float:
        run = client.post(
            f"/api/v1/monitors/{fm4['id']}/run", headers=auth(admin), json={"now": NOW.isoformat()}
        ).json()
        return float(run["evidence"]["label_coverage"])

    assert coverage() == 0.0
    body = {"roles": {"resolved": "true"}, "label_sources": ["online"]}
    assert client.put(ROLES, headers=auth(admin), json=body).status_code == 200
    assert coverage() == 1.0
    # Back to no roles: the same stored scores are proxies again.
    assert client.put(ROLES, headers=auth(admin), json={}).status_code == 200
    assert coverage() == 0.0
