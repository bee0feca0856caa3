"""Scheduled monitor runs read their windows through ``TELLTALE_READ_DATABASE_URL`` and
write everything through the primary. The read engine here is a real read-only connection
(PostgreSQL ``default_transaction_read_only``, SQLite ``mode=ro``): a write through it
fails, so a run that needed one would be recorded as failed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, create_engine, event, update
from sqlalchemy.orm import Session

from app.ingest.events import validate_events
from app.ingest.store import write_events
from app.models import Monitor
from app.monitors.defaults import create_defaults
from app.monitors.runner import run_monitor
from app.scheduler.service import SchedulerService
from app.settings import Settings
from pipelines.scenarios import Injection, generate_workload
from tests.app.engine_helpers import setup_project

T0 = datetime(2025, 3, 3, tzinfo=UTC)


def _read_only(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = url.removeprefix("sqlite:///")
        return create_engine(f"sqlite:///file:{path}?mode=ro&uri=true")
    return create_engine(url, connect_args={"options": "-c default_transaction_read_only=on"})


def _statements(engine: Engine) -> list[str]:
    seen: list[str] = []

    @event.listens_for(engine, "before_cursor_execute")
    def _seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(" ".join(statement.split()).upper())

    return seen


def test_scheduled_runs_read_windows_from_the_read_url_and_write_to_the_primary(
    engine: Engine, db_url: str
) -> None:
    pid = setup_project(engine)
    events = generate_workload(
        # 8 h: the defaults' first verdict (FM-4 and OUTCOME wait 40 h: they load nothing).
        0, T0, timedelta(hours=8), 70.0,
        injections=[Injection("FM-2", T0 + timedelta(hours=6), "strong")],
        embedding_dim=16, images_per_hour=60.0,
    )  # fmt: skip
    valid, rejected = validate_events(events)
    assert not rejected
    for i in range(0, len(valid), 5000):
        write_events(engine, project_id=pid, events=valid[i : i + 5000])
    with Session(engine) as session:
        ids = [m.id for m in create_defaults(session, project_id=pid)]
        session.commit()
    now = T0 + timedelta(hours=8)
    alone = {mid: run_monitor(engine, monitor_id=mid, now=now) for mid in ids}
    with engine.begin() as conn:  # every monitor due again
        conn.execute(update(Monitor).values(next_run_at=None))

    replica = _read_only(db_url)
    on_replica, on_primary = _statements(replica), _statements(engine)
    service = SchedulerService(
        Settings(database_url="sqlite://"), engine, None, clock=lambda: now, read_engine=replica
    )
    runs = {run.monitor_id: run for run in service.tick()}
    replica.dispose()

    assert set(runs) == set(ids)
    for mid, run in runs.items():
        before = alone[mid]
        assert before is not None and run.status != "failed", run.evidence
        assert (run.status, run.fired, run.statistic, run.n_current) == (
            before.status, before.fired, before.statistic, before.n_current
        )  # fmt: skip
    assert any(run.fired for run in runs.values())  # the FM-2 failure: an alert opened
    windows_read = [s for s in on_replica if " FROM TRACES" in s or " FROM EMBEDDINGS" in s]
    # Reads only (the readiness counts a run keeps are read in a savepoint, which a
    # streaming replica allows in its read-only transactions).
    reads = ("SELECT", "WITH", "SAVEPOINT", "RELEASE SAVEPOINT")
    assert windows_read and all(s.startswith(reads) for s in on_replica)
    assert not [s for s in on_primary if " FROM TRACES" in s]  # the windows moved off it
    assert sum(s.startswith("INSERT INTO DETECTOR_RUNS") for s in on_primary) == len(ids)


def test_the_read_url_setting_gives_the_scheduler_its_read_engine(db_url: str) -> None:
    service = SchedulerService(
        Settings(database_url=db_url, read_database_url=db_url), create_engine(db_url), None
    )
    assert service.read_engine is not None
    assert service.read_engine.url.render_as_string(hide_password=False) == db_url
    plain = SchedulerService(Settings(database_url=db_url), create_engine(db_url), None)
    assert plain.read_engine is None
