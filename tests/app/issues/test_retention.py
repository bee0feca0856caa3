"""Retention removes a trace's failure events with the trace and keeps its issue's
summary counts (app/retention/purge.py), on both databases."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select, update

from app.models import FailureEvent, Trace
from app.models.base import utcnow
from app.retention.purge import purge_all
from tests.app.derive.test_derive_job import derive
from tests.app.issues.test_record import NOT_FOUND, issues
from tests.app.issues.traffic import failing_trace, send


def test_retention_takes_the_events_and_keeps_the_counts(client: TestClient, make_key: Any,
                                                         engine: Engine) -> None:  # fmt: skip
    send(client, make_key("ingest"), [
        failing_trace(t, [("get_reservation", "error", NOT_FOUND.format(t + "5K"))])
        for t in ("old", "new")
    ])  # fmt: skip
    derive(engine)
    with engine.begin() as conn:  # "old" arrived 40 days ago
        conn.execute(update(Trace).where(Trace.trace_id == "old")
                     .values(created_at=utcnow() - timedelta(days=40)))  # fmt: skip
    deleted = purge_all(engine, default_days=30, pause_s=0)
    assert deleted["traces"] == 1 and deleted["failure_events"] == 1
    with engine.connect() as conn:
        assert conn.execute(select(FailureEvent.trace_id)).scalars().all() == ["new"]
        assert conn.scalar(select(func.count()).select_from(Trace)) == 1
    (issue,) = issues(engine).values()
    assert (issue.event_count, issue.trace_count) == (2, 2)  # the summary stays
