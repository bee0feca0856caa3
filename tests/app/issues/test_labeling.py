"""An issue's example traces sent to a labeling queue (app/issues/labeling.py), then
claimed by an annotator like any item; on both databases."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine

from tests.app.derive.test_derive_job import derive
from tests.app.issues.test_api import listed, traffic
from tests.app.issues.traffic import send
from tests.app.labeling.test_queues import queue_body
from tests.conftest import auth


def test_label_examples_fill_a_queue_once(client: TestClient, make_key: Any,
                                          engine: Engine) -> None:  # fmt: skip
    send(client, make_key("ingest"), traffic())
    derive(engine)
    admin, annotator = make_key("admin"), make_key("annotate")
    assert client.post("/api/v1/queues", json=queue_body(), headers=auth(admin)).status_code == 201
    top = listed(client, annotator)[0]
    path = f"/api/v1/issues/{top['id']}/label-examples"
    r = client.post(path, json={"queue": "q", "limit": 2}, headers=auth(annotator))
    assert r.json() == {"queue": "q", "added": 2, "already_queued": 0}, r.text
    r = client.post(path, json={"queue": "q"}, headers=auth(annotator))
    assert r.json() == {"queue": "q", "added": 1, "already_queued": 2}
    claimed = client.post("/api/v1/queues/q/claim", json={"n": 5}, headers=auth(annotator))
    items = claimed.json()["items"]
    assert sorted(i["sample"]["key"] for i in items) == ["trace:a", "trace:b", "trace:c"]
    assert all(top["title"] in i["reason"] for i in items), items
    missing = client.post(path, json={"queue": "nope"}, headers=auth(annotator))
    assert missing.status_code == 422 and missing.json()["detail"].startswith("queue:")
    reader = client.post(path, json={"queue": "q"}, headers=auth(make_key("read")))
    assert reader.status_code == 403
