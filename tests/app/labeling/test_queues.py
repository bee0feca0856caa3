"""Queue CRUD, roles, project isolation, and filling by the active-learning selector."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import Engine, insert, select
from sqlalchemy.orm import Session

from app.ingest.events import validate_events
from app.ingest.store import write_events
from app.labeling.fill import fill_queue
from app.models import DetectorRun, Monitor, Project
from app.models.labeling import LabelQueue, QueueItem
from tests.conftest import auth

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def project_id(engine: Engine, name: str = "p1") -> int:
    with Session(engine) as s:
        pid = s.scalar(select(Project.id).where(Project.name == name))
    assert pid is not None
    return int(pid)


def seed(engine: Engine, pid: int, events: list[dict[str, Any]]) -> None:
    valid, rejected = validate_events(events)
    assert not rejected, rejected
    write_events(engine, project_id=pid, events=valid)


def embedding_event(
    i: int, stream: str, vec: np.ndarray, at: datetime, trace_id: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "stream": stream,
        "vector": [float(x) for x in vec],
        "created_at": at.isoformat(),
    }
    if trace_id:
        body["trace_id"] = trace_id
    return {"id": f"emb-{stream}-{i}", "type": "embedding", "body": body}


def trace_event(
    tid: str, *, agent: str = "planner", task: str = "billing", at: datetime = T0
) -> dict[str, Any]:
    return {
        "id": f"trace-{tid}",
        "type": "trace",
        "body": {
            "trace_id": tid,
            "agent": agent,
            "agent_version": "1",
            "started_at": at.isoformat(),
            "ended_at": (at + timedelta(seconds=5)).isoformat(),
            "attributes": {
                "decision": "refund",
                "task_type": task,
                "confidence": 0.7,
                "text": f"question {tid}",
            },
        },
    }


def queue_body(name: str = "q", **over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "selection": {"streams": ["vlm.image"]},
        "label_schema": {
            "type": "categorical",
            "values": ["correct", "wrong"],
            "correct_values": ["correct"],
        },
        "budget_per_period": 4,
        "fill_interval_seconds": 3600,
    }
    body.update(over)
    return body


def add_items(
    engine: Engine, queue_name: str, n: int, *, pid: int, traces: list[str] | None = None
) -> None:
    """Items straight into a queue (priority n..1), for the claim tests."""
    with Session(engine) as s:
        qid = s.scalar(
            select(LabelQueue.id).where(LabelQueue.project_id == pid, LabelQueue.name == queue_name)
        )
    rows = [
        {
            "project_id": pid,
            "queue_id": qid,
            "sample_key": f"trace:{traces[i]}" if traces else f"emb:{i}",
            "trace_id": traces[i] if traces else None,
            "priority": float(n - i),
            "novelty": float(n - i),
            "boost": 1.0,
            "reason": "test",
            "status": "pending",
            "claims": 0,
            "created_at": T0,
        }
        for i in range(n)
    ]
    with engine.begin() as conn:
        conn.execute(insert(QueueItem), rows)


# --- CRUD, validation, roles ---------------------------------------------------------


def test_queue_crud_and_field_named_errors(client, make_key):
    admin = make_key("admin")
    r = client.post("/api/v1/queues", json=queue_body(), headers=auth(admin))
    assert r.status_code == 201, r.text
    assert r.json()["label_schema"]["values"] == ["correct", "wrong"]
    assert client.post("/api/v1/queues", json=queue_body(), headers=auth(admin)).status_code == 409

    bad = queue_body("b", selection={"streams": []})
    r = client.post("/api/v1/queues", json=bad, headers=auth(admin))
    assert r.status_code == 422 and "selection" in r.json()["detail"]
    bad = queue_body("b", label_schema={"type": "score", "min": 5, "max": 1})
    r = client.post("/api/v1/queues", json=bad, headers=auth(admin))
    assert r.status_code == 422 and "label_schema" in r.json()["detail"]
    bad = queue_body(
        "b", label_schema={"type": "categorical", "values": ["a"], "correct_values": ["z"]}
    )
    assert client.post("/api/v1/queues", json=bad, headers=auth(admin)).status_code == 422
    r = client.post(
        "/api/v1/queues", json=queue_body("b", budget_per_period=0), headers=auth(admin)
    )
    assert r.status_code == 422 and "budget_per_period" in r.json()["detail"]

    r = client.patch(
        "/api/v1/queues/q", json={"budget_per_period": 9, "lease_seconds": 60}, headers=auth(admin)
    )
    assert r.status_code == 200 and r.json()["budget_per_period"] == 9
    r = client.get("/api/v1/queues", headers=auth(admin))
    assert [q["name"] for q in r.json()["queues"]] == ["q"]
    assert r.json()["queues"][0]["items"] == {"pending": 0, "leased": 0, "labeled": 0, "skipped": 0}
    assert client.delete("/api/v1/queues/q", headers=auth(admin)).status_code == 204
    r = client.get("/api/v1/queues/q", headers=auth(admin))
    assert r.status_code == 404 and "name" in r.json()["detail"]


# One rule (docs/guides/labeling.md): reading a queue -- its definition, counts, stats and
# labels -- needs ``read`` (annotate and admin imply it); changing one needs ``admin``;
# working its items needs ``annotate``. GET /queues/{name} was admin-only while the same
# queue's stats and labels were readable with a read key.
QUEUE_ROUTES: list[tuple[str, str, Any, set[str]]] = [
    ("GET", "/api/v1/queues", None, {"read", "annotate", "admin"}),
    ("GET", "/api/v1/queues/q", None, {"read", "annotate", "admin"}),
    ("GET", "/api/v1/queues/q/stats", None, {"read", "annotate", "admin"}),
    ("GET", "/api/v1/queues/q/labels.jsonl", None, {"read", "annotate", "admin"}),
    ("POST", "/api/v1/queues/q/claim", {"n": 1}, {"annotate", "admin"}),
    ("POST", "/api/v1/queues/q/fill", None, {"admin"}),
    ("PATCH", "/api/v1/queues/q", {"budget_per_period": 9}, {"admin"}),
]


def test_roles_are_enforced(client, make_key):
    admin = make_key("admin")
    keys = {role: make_key(role) for role in ("ingest", "read", "annotate", "admin")}
    r = client.post("/api/v1/queues", json=queue_body(), headers=auth(keys["annotate"]))
    assert r.status_code == 403
    assert client.post("/api/v1/queues", json=queue_body(), headers=auth(admin)).status_code == 201
    for method, path, body, allowed in QUEUE_ROUTES:
        for role, key in keys.items():
            r = client.request(method, path, json=body, headers=auth(key))
            expected = 200 if role in allowed else 403
            assert r.status_code == expected, (method, path, role, r.text)
    assert client.post("/api/v1/queues/q/claim", json={"n": 1}).status_code == 401
    assert client.delete("/api/v1/queues/q", headers=auth(keys["annotate"])).status_code == 403


def test_project_a_cannot_see_or_label_project_b_items(client, make_key, engine):
    admin_b, annot_b = make_key("admin", "pb"), make_key("annotate", "pb")
    admin_a, annot_a = make_key("admin", "pa"), make_key("annotate", "pa")
    client.post("/api/v1/queues", json=queue_body("shared"), headers=auth(admin_b))
    add_items(engine, "shared", 3, pid=project_id(engine, "pb"))

    assert (
        client.post("/api/v1/queues/shared/claim", json={"n": 5}, headers=auth(annot_a)).status_code
        == 404
    )
    assert client.get("/api/v1/queues/shared/stats", headers=auth(annot_a)).status_code == 404
    assert client.get("/api/v1/queues/shared", headers=auth(admin_a)).status_code == 404
    # Project A's queue of the same name holds only A's (no) items.
    client.post("/api/v1/queues", json=queue_body("shared"), headers=auth(admin_a))
    r = client.post("/api/v1/queues/shared/claim", json={"n": 5}, headers=auth(annot_a))
    assert r.status_code == 200 and r.json()["items"] == []

    items = client.post("/api/v1/queues/shared/claim", json={"n": 1}, headers=auth(annot_b)).json()[
        "items"
    ]
    item = items[0]
    body = {"lease_token": item["lease_token"], "label": "correct"}
    r = client.post(f"/api/v1/queue-items/{item['id']}/label", json=body, headers=auth(annot_a))
    assert r.status_code == 404
    for action in ("skip", "release"):
        r = client.post(
            f"/api/v1/queue-items/{item['id']}/{action}",
            json={"lease_token": item["lease_token"]},
            headers=auth(annot_a),
        )
        assert r.status_code == 404
    r = client.post(f"/api/v1/queue-items/{item['id']}/label", json=body, headers=auth(annot_b))
    assert r.status_code == 200, r.text


# --- filling ---------------------------------------------------------------------------


def _fired_fm6(engine: Engine, pid: int, stream: str, start: datetime, end: datetime) -> None:
    with Session(engine) as s:
        mon = Monitor(
            project_id=pid, name="drift-img", failure_mode="FM-6", selection={"stream": stream}
        )
        s.add(mon)
        s.flush()
        s.add(
            DetectorRun(
                project_id=pid,
                monitor_id=mon.id,
                failure_mode="FM-6",
                at=end,
                window_start=start,
                window_end=end,
                status="ok",
                statistic=0.4,
                threshold=0.1,
                fired=True,
                evidence={},
            )
        )
        s.commit()


def _blobs(engine: Engine, pid: int) -> dict[str, list[str]]:
    """20 reference vectors at e0, then candidates: 10 at e0, 5 at e1 (in the FM-6 window), 5 at e2."""
    rng = np.random.default_rng(7)
    eye = np.eye(4)
    events, groups, i = [], {"e0": [], "e1": [], "e2": []}, 0
    plan = [("ref", 0, 20), ("e0", 0, 10), ("e1", 1, 5), ("e2", 2, 5)]
    for group, axis, n in plan:
        for _ in range(n):
            vec = eye[axis] + rng.normal(scale=0.03, size=4)
            events.append(embedding_event(i, "vlm.image", vec, T0 + timedelta(minutes=i)))
            if group != "ref":
                groups[group].append(f"emb-vlm.image-{i}")
            i += 1
    seed(engine, pid, events)
    return groups


def test_fill_picks_novel_diverse_samples_in_priority_order_with_boosts(client, make_key, engine):
    admin, annot = make_key("admin"), make_key("annotate")
    client.post(
        "/api/v1/queues",
        json=queue_body(budget_per_period=4, reference_size=20),
        headers=auth(admin),
    )
    pid = project_id(engine)
    _blobs(engine, pid)
    # FM-6 fired on a window holding the e1 group (minutes 30..34).
    _fired_fm6(
        engine, pid, "vlm.image", T0 + timedelta(minutes=30), T0 + timedelta(minutes=34, seconds=30)
    )

    r = client.post("/api/v1/queues/q/fill", headers=auth(admin))
    assert r.status_code == 200, r.text
    assert r.json()["added"] == 4 and r.json()["boosted"] >= 1

    items = client.post("/api/v1/queues/q/claim", json={"n": 10}, headers=auth(annot)).json()[
        "items"
    ]
    assert len(items) == 4
    priorities = [it["priority"] for it in items]
    assert priorities == sorted(priorities, reverse=True)
    minutes = [int(it["sample"]["time"][14:16]) for it in items]
    group = ["e1" if 30 <= m < 35 else "e2" if m >= 35 else "e0" for m in minutes]
    # Novel AND diverse: both far blobs are picked; the boosted blob comes first.
    assert group[0] == "e1" and "e2" in group
    top = items[0]
    assert top["boost"] == 2.0 and abs(top["priority"] - 2.0 * top["novelty"]) < 1e-9
    assert "boosted" in top["reason"] and "FM-6" in top["reason"] and "vlm.image" in top["reason"]
    for it in items:
        if it["boost"] == 1.0:
            assert "boosted" not in it["reason"]
    assert top["sample"]["kind"] == "embedding" and top["sample"]["image_url"] is None

    # Budget per period: a second fill in the same period adds nothing; never twice the same.
    assert client.post("/api/v1/queues/q/fill", headers=auth(admin)).json()["added"] == 0
    with Session(engine) as s:
        keys = s.scalars(select(QueueItem.sample_key)).all()
    assert len(keys) == len(set(keys)) == 4


def test_fill_respects_budget_per_period_and_never_enqueues_twice(engine, make_key, client):
    admin = make_key("admin")
    client.post(
        "/api/v1/queues",
        json=queue_body(budget_per_period=3, reference_size=20),
        headers=auth(admin),
    )
    pid = project_id(engine)
    _blobs(engine, pid)
    with Session(engine) as s:
        qid = s.scalar(select(LabelQueue.id))
    now = T0 + timedelta(days=1)
    assert fill_queue(engine, queue_id=qid, now=now, backend="numpy").added == 3
    assert (
        fill_queue(engine, queue_id=qid, now=now + timedelta(minutes=5), backend="numpy").added == 0
    )
    later = [
        fill_queue(engine, queue_id=qid, now=now + timedelta(hours=h), backend="numpy").added
        for h in range(2, 12)
    ]
    # 20 candidates in all: the queue ends holding each exactly once.
    assert sum(later) == 17
    with Session(engine) as s:
        keys = s.scalars(select(QueueItem.sample_key)).all()
    assert len(keys) == len(set(keys)) == 20


def test_fm4_needs_labels_request_enqueues_unlabeled_traces_of_the_cohorts(
    client, make_key, engine
):
    admin, annot = make_key("admin"), make_key("annotate")
    body = queue_body("gt", selection={"agents": ["planner"]}, budget_per_period=50)
    assert client.post("/api/v1/queues", json=body, headers=auth(admin)).status_code == 201
    pid = project_id(engine)
    events = [trace_event(f"b{i}", task="billing", at=T0 + timedelta(minutes=i)) for i in range(6)]
    events += [trace_event(f"s{i}", task="search", at=T0 + timedelta(minutes=i)) for i in range(4)]
    events += [
        {
            "id": "lab-b0",
            "type": "score",
            "body": {
                "trace_id": "b0",
                "name": "success",
                "value": 1,
                "kind": "true",
                "source": "human",
            },
        }
    ]
    seed(engine, pid, events)
    with Session(engine) as s:
        mon = Monitor(
            project_id=pid, name="gt-planner", failure_mode="FM-4", selection={"agent": "planner"}
        )
        s.add(mon)
        s.flush()
        s.add(
            DetectorRun(
                project_id=pid,
                monitor_id=mon.id,
                failure_mode="FM-4",
                at=datetime.now(UTC),
                window_start=T0,
                window_end=T0 + timedelta(hours=1),
                status="insufficient_data",
                fired=False,
                evidence={
                    "needs_labels": True,
                    "label_coverage": 0.1,
                    "cohorts_needing_labels": [
                        {
                            "agent": "planner",
                            "agent_version": "1",
                            "task_type": "billing",
                            "n_traces": 6,
                            "coverage": 1 / 6,
                        }
                    ],
                },
            )
        )
        s.commit()
    r = client.post("/api/v1/queues/gt/fill", headers=auth(admin))
    assert r.json()["from_label_requests"] == 5, r.text
    items = client.post("/api/v1/queues/gt/claim", json={"n": 10}, headers=auth(annot)).json()[
        "items"
    ]
    assert sorted(it["sample"]["trace"]["trace_id"] for it in items) == [
        f"b{i}" for i in range(1, 6)
    ]
    it = items[0]
    assert "requested by FM-4" in it["reason"] and "task_type=billing" in it["reason"]
    assert it["sample"]["kind"] == "trace" and it["sample"]["text"].startswith("question b")
    trace = it["sample"]["trace"]
    assert trace["agent"] == "planner" and trace["decision"] == "refund" and trace["steps"] == 0
