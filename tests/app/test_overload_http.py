"""The saturated write path answers 429 with Retry-After over real HTTP, never 500."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from app.main import create_app
from app.settings import Settings
from tests.conftest import LiveServer, auth

ROOT = Path(__file__).resolve().parents[2]


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


def test_many_concurrent_reads_get_200_or_fast_429_and_health_keeps_answering(settings, make_key):
    # 128 clients reading at once took every request thread and pooled connection: 503s
    # after 30 s pool waits, /healthz silent (old code: every client timed out at 20 s),
    # the scheduler's jobs timing out. Reads are admitted like writes now, the pool is
    # sized for them, and health and background jobs need neither. The bounds below are
    # loose: the machine running the suite may be shared.
    key = make_key("read")
    background_s: list[float] = []
    app = create_app(settings, start_background=False)
    with LiveServer(app) as server:
        stop = threading.Event()

        def background_job() -> None:  # what a scheduler job does first
            while not stop.wait(0.3):
                start = time.monotonic()
                with app.state.background_engine.connect() as conn:
                    conn.exec_driver_sql("SELECT 1")
                background_s.append(time.monotonic() - start)

        job = threading.Thread(target=background_job)
        job.start()
        try:
            out = subprocess.run(
                [sys.executable, "-m", "tests.app.read_load", server.url, key, "4", "128"],
                capture_output=True, text=True, timeout=60, cwd=ROOT,
            )  # fmt: skip
        finally:
            stop.set()
            job.join()
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    statuses = {int(k): n for k, n in result["statuses"].items()}
    assert set(statuses) <= {200, 429}, statuses
    assert statuses.get(200, 0) >= 50 and statuses.get(429, 0) > 0, statuses
    # A keep-alive connection closed under a client's reuse is a transport error, not an
    # answer (read_load); a few under a loaded machine, never a share of the load.
    errors = sum(result["transport_errors"].values())
    assert errors <= max(3, sum(statuses.values()) // 100), result["transport_errors"]
    assert result["health_s"] and max(result["health_s"]) < 2.5, result["health_s"]
    assert background_s and max(background_s) < 2.5, background_s
