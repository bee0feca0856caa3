"""Issues and their counts stay consistent after a kill -9 of the derive job in the middle
of its write (app/issues/record.py writes in the derive transaction), on both databases."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, update

from app.models import Trace
from tests.app.derive.test_derive_job import derive
from tests.app.issues.test_record import NOT_FOUND, counted_events, issues
from tests.app.issues.traffic import failing_trace, send

ROOT = Path(__file__).resolve().parents[3]
# The derive job, killed (SIGKILL, no cleanup) once its write has recorded the failures
# and before it commits: the evaluator queue is written after them in the same transaction.
KILLED_DERIVE = """
import os, signal, sys
from datetime import timedelta
from app.db import make_engine
from app.derive import job
from app.models.base import utcnow
job.enqueue_derived = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
job.derive_pending(make_engine(sys.argv[1]), now=utcnow() + timedelta(seconds=60),
                   settle_seconds=30, text_embeddings=False)
"""


def _tool_failures(*trace_ids: str) -> list[list[dict[str, Any]]]:
    return [failing_trace(t, [("get_reservation", "error", NOT_FOUND.format(t + "9Q"))])
            for t in trace_ids]  # fmt: skip


def test_a_kill_during_the_write_leaves_events_and_counts_as_one(
    client: TestClient, make_key: Any, engine: Engine, db_url: str
) -> None:
    key = make_key("ingest")
    send(client, key, _tool_failures("a", "b"))
    derive(engine)
    before = {i.id: (i.event_count, i.trace_count) for i in issues(engine).values()}
    # One new failing trace and one queued again, then the job dies mid-write.
    send(client, key, _tool_failures("c"))
    with engine.begin() as conn:
        conn.execute(update(Trace).where(Trace.trace_id == "a").values(derived_at=None))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed = subprocess.run([sys.executable, "-c", KILLED_DERIVE, db_url], env=env,
                            cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    engine.dispose()  # the dead process's connections are gone; start from fresh ones
    assert {i.id: (i.event_count, i.trace_count) for i in issues(engine).values()} == before
    assert counted_events(engine) == before
    # The next run derives what the dead one left: every count is what the events say.
    assert derive(engine).traces == 2
    after = {i.id: (i.event_count, i.trace_count) for i in issues(engine).values()}
    assert after == counted_events(engine) and list(after.values()) == [(3, 3)]
