"""The saturated write path answers 429 with Retry-After over real HTTP, never 500."""

from __future__ import annotations

import threading

import httpx

from app.main import create_app
from app.settings import Settings
from tests.conftest import LiveServer, auth


def test_saturation_returns_429_and_acknowledged_data_lands(db_url, tmp_path, make_key):
    settings = Settings(
        database_url=db_url, scheduler_enabled=False, max_concurrent_writes=1, max_pending_writes=0
    )
    key = make_key("ingest")
    statuses: list[int] = []
    accepted = 0
    lock = threading.Lock()

    def send(i: int) -> None:
        nonlocal accepted
        events = [
            {
                "id": f"{i}-{j}",
                "type": "span",
                "body": {"trace_id": f"t{i}", "span_id": f"s{j}", "attributes": {"k": "v" * 50}},
            }
            for j in range(400)
        ]
        with httpx.Client(base_url=server.url, timeout=60) as c:
            r = c.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
        with lock:
            statuses.append(r.status_code)
            if r.status_code == 429:
                assert r.headers["retry-after"] == "1"
            elif r.status_code == 200:
                accepted += r.json()["accepted"]

    with LiveServer(create_app(settings, start_background=False)) as server:
        threads = [threading.Thread(target=send, args=(i,)) for i in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with httpx.Client(base_url=server.url) as c:
            reader = make_key("read")
            stored = 0
            for i in range(12):
                r = c.get(f"/api/v1/traces/t{i}", headers=auth(reader))
                if r.status_code == 200:
                    stored += len(r.json()["spans"])
    assert set(statuses) <= {200, 429} and 429 in statuses and 200 in statuses
    assert stored == accepted
