"""A ``telltale evaluate`` worker killed with SIGKILL in the middle of a batch loses nothing
and duplicates nothing: its leases return to the queue and the next worker scores each
trace exactly once (both databases)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select, update

from app.evaluators.queue import LEASE_SECONDS
from app.evaluators.runner import run_due
from app.models import Score
from app.models.evaluators import Evaluation, Evaluator
from app.settings import Settings
from bench.fake_judge import JudgeServer
from tests.app.evaluators.test_evaluators import judge_body, settle, traffic
from tests.conftest import auth

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def slow_judge() -> Iterator[JudgeServer]:
    server = JudgeServer(delay=1.0)
    yield server
    server.close()


def test_a_worker_killed_mid_batch_loses_nothing_and_duplicates_nothing(
    client: TestClient, make_key: Any, engine: Engine, db_url: str, slow_judge: JudgeServer,
    settings: Settings, tmp_path: Path,
) -> None:  # fmt: skip
    key = make_key("admin")
    body = judge_body(slow_judge, concurrency=4)
    assert client.post("/api/v1/evaluators", json=body, headers=auth(key)).status_code == 201
    with engine.begin() as conn:  # created an hour ago; its traffic came 30 minutes ago
        conn.execute(update(Evaluator).values(watch_from=datetime.now(UTC) - timedelta(hours=1)))
    traffic(client, key, 12, at=datetime.now(UTC) - timedelta(minutes=30))
    now = settle(engine)
    env = {**os.environ, "TELLTALE_DATABASE_URL": db_url, "TELLTALE_JUDGE_ALLOW": "127.0.0.1/32"}
    # `settle` derives (and queues) them 5 minutes ahead of the wall clock the worker
    # reads: let the worker see them settled and due.
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE traces SET derived_at = started_at")
        conn.execute(update(Evaluation).values(due_at=datetime.now(UTC) - timedelta(minutes=1)))
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen([sys.executable, "-m", "app", "evaluate", "--once"], env=env,
                                  cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while len(slow_judge.requests) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(slow_judge.requests) >= 4, log.read_text()
        worker.send_signal(signal.SIGKILL)  # four calls in flight, nothing written yet
        worker.wait(10)
    finally:
        if worker.poll() is None:
            worker.kill()
    with engine.connect() as conn:
        running = conn.scalar(select(func.count()).where(Evaluation.status == "running"))
        # One batch leased all twelve (4 slots x 4); four calls were in flight.
        assert running == 12 and conn.scalar(select(func.count()).select_from(Score)) == 0
    judge_settings = settings.model_copy(update={"judge_allow": ["127.0.0.1/32"]})
    slow_judge.delay = 0.0
    later = now + timedelta(seconds=LEASE_SECONDS + 1)
    while run_due(engine, judge_settings, now=later).calls:
        pass
    with engine.connect() as conn:
        per_trace = conn.execute(
            select(Score.trace_id, func.count()).group_by(Score.trace_id)
        ).all()
        statuses = conn.execute(
            select(Evaluation.status, func.count()).group_by(Evaluation.status)
        ).all()
    assert len(per_trace) == 12 and all(n == 1 for _, n in per_trace)
    assert statuses == [("done", 12)]
