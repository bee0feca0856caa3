"""Scale-out, proven: two ``telltale serve`` replicas and one ``telltale scheduler`` on one
PostgreSQL database. Ingest is spread over both replicas (an event re-sent to the other one
is stored once), each monitor runs once per interval, and the retention job deletes the
expired data once while ingest carries on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, func, select, update

from app.db import make_engine
from app.models import DetectorRun, IngestEvent, SchedulerLease, Span, Trace
from app.models.base import utcnow
from tests.app.engine_helpers import add_monitor, setup_project, store_interval
from tests.conftest import auth, fresh_database, key_for
from tests.reliability.servers import serve

ROOT = Path(__file__).resolve().parents[2]


def _batch(i: int) -> list[dict[str, object]]:
    return [
        {"id": f"b{i}-{j}", "type": "span",
         "body": {"trace_id": f"live{i}", "span_id": f"s{j}", "name": "step"}}
        for j in range(20)
    ]  # fmt: skip


def _runs_per_monitor(engine: Engine, monitors: int) -> list[int]:
    """Runs recorded per monitor; a monitor that has not run yet counts 0."""
    with engine.connect() as conn:
        counts = list(
            conn.scalars(
                select(func.count()).select_from(DetectorRun).group_by(DetectorRun.monitor_id)
            )
        )
    return counts + [0] * (monitors - len(counts))


@pytest.mark.slow
def test_two_replicas_and_one_scheduler(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = fresh_database("postgresql", tmp_path, request)
    engine = make_engine(url)
    try:
        pid = setup_project(engine)
        key = key_for(url, "ingest")
        interval = 2
        for mode in ("FM-1", "FM-2"):  # below the API's floor: the scheduler keeps it
            store_interval(engine, add_monitor(engine, pid, mode), interval)
        # Expired data: 40 days old, past the 30-day default retention.
        old = utcnow() - timedelta(days=40)
        with ExitStack() as stack:
            replicas = [stack.enter_context(serve(url)) for _ in range(2)]
            with httpx.Client(timeout=20) as c:
                old_events = [
                    {"id": f"old{j}", "type": "trace",
                     "body": {"trace_id": f"old{j}", "agent": "bot"}}
                    for j in range(50)
                ]  # fmt: skip
                r = c.post(f"{replicas[0]}/api/v1/ingest", json={"events": old_events},
                           headers=auth(key))  # fmt: skip
                assert r.status_code == 200, r.text
            with engine.begin() as conn:
                for model in (Trace, IngestEvent):
                    conn.execute(
                        update(model).where(model.project_id == pid).values(created_at=old)
                    )

            acked: list[int] = []
            errors: list[str] = []
            stop = threading.Event()

            def stream(offset: int) -> None:
                i = offset
                with httpx.Client(timeout=20) as c:
                    while not stop.is_set():
                        # Every batch goes to one replica, then again to the other: the
                        # second copy must be a duplicate whichever replica stored it.
                        first, second = replicas[i % 2], replicas[(i + 1) % 2]
                        r1 = c.post(f"{first}/api/v1/ingest", json={"events": _batch(i)},
                                    headers=auth(key))  # fmt: skip
                        r2 = c.post(f"{second}/api/v1/ingest", json={"events": _batch(i)},
                                    headers=auth(key))  # fmt: skip
                        if r1.status_code != 200 or r2.status_code != 200:
                            errors.append(f"{r1.status_code} {r2.status_code} {r2.text[:200]}")
                        elif r1.json()["accepted"] + r2.json()["accepted"] != 20:
                            errors.append(f"stored twice or lost: {r1.json()} {r2.json()}")
                        else:
                            acked.append(i)
                        i += 2

            writers = [threading.Thread(target=stream, args=(k,)) for k in range(2)]
            for w in writers:
                w.start()
            env = {**os.environ, "TELLTALE_DATABASE_URL": url}
            scheduler = subprocess.Popen(
                [sys.executable, "-m", "app", "scheduler", "--tick", "0.2", "--no-outbox",
                 "--min-interval", "1"],
                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            try:
                deadline = time.monotonic() + 60
                while True:
                    with engine.connect() as conn:
                        n_old = conn.scalar(select(func.count()).where(Trace.trace_id.like("old%")))
                        n_runs = conn.scalar(select(func.count()).select_from(DetectorRun))
                    if n_old == 0 and n_runs >= 2:
                        break
                    assert time.monotonic() < deadline, (n_old, n_runs)
                    time.sleep(0.2)
                # Then until each monitor has run three times with the writers still going
                # (polled, not slept for: how soon that is depends on the machine).
                while len(acked) < 10 or min(_runs_per_monitor(engine, 2)) < 3:
                    assert time.monotonic() < deadline, (len(acked), _runs_per_monitor(engine, 2))
                    time.sleep(0.2)
            finally:
                stop.set()
                for w in writers:
                    w.join(timeout=60)
                scheduler.send_signal(signal.SIGTERM)
                assert scheduler.wait(timeout=30) == 0

        assert not errors, errors[:3]
        assert len(acked) >= 10
        with engine.connect() as conn:
            # Retention: the expired rows are gone, everything ingested meanwhile is kept
            # (20 spans per acknowledged batch, none twice).
            assert conn.scalar(select(func.count()).where(Trace.trace_id.like("old%"))) == 0
            assert conn.scalar(select(func.count()).where(IngestEvent.event_id.like("old%"))) == 0
            spans = conn.scalar(select(func.count()).select_from(Span))
            assert spans == 20 * len(acked)
            lease = conn.execute(
                select(SchedulerLease).where(SchedulerLease.name == "data_retention")
            ).one()
            # One pass: the lease holds the job for its hour, so no second pass could run.
            assert (lease.next_run_at - utcnow()).total_seconds() >= 3000
            runs = conn.execute(select(DetectorRun.monitor_id, DetectorRun.at)).all()
        per_monitor: dict[int, list] = {}
        for monitor_id, at in runs:
            per_monitor.setdefault(monitor_id, []).append(at)
        assert len(per_monitor) == 2
        for ats in per_monitor.values():
            ats.sort()
            gaps = [(b - a).total_seconds() for a, b in zip(ats, ats[1:], strict=False)]
            assert len(ats) >= 3 and all(g >= interval - 0.3 for g in gaps), gaps
    finally:
        engine.dispose()
