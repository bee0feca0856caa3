"""The derive job serves projects fairly: one project's flood of waiting traces takes a
share of each batch, and another project's fresh trace is derived in the first batch."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from app.derive.job import derive_pending
from app.models import Project, Trace
from app.models.base import utcnow
from tests.app.derive.otlp_agent import agent_run, send


def test_a_flooding_project_leaves_room_for_another_in_the_first_batch(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    send(client, make_key("ingest", project="a"), [agent_run(f"order {i}") for i in range(30)])
    send(client, make_key("ingest", project="b"), [agent_run("where is my refund?")])
    report = derive_pending(
        engine, now=utcnow() + timedelta(seconds=60), batch_size=10, text_embeddings=False,
        time_budget_s=0.0,  # one batch, then the job's time is up
    )  # fmt: skip
    assert report.batches == 1 and report.traces == 10
    with engine.connect() as conn:
        derived = dict(
            conn.execute(
                select(Project.name, Trace.id)
                .join(Project, Project.id == Trace.project_id)
                .where(Trace.derived_at.is_not(None))
            ).all()
        )
    # B's one trace arrived last; oldest-first it waited for all thirty of A's
    assert "b" in derived
    # the rest of the job derives everything, each trace once
    rest = derive_pending(engine, now=utcnow() + timedelta(seconds=60), batch_size=10,
                          text_embeddings=False)  # fmt: skip
    assert rest.traces == 21


def test_a_batch_reads_a_share_of_spans_per_project(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    big = [agent_run(f"order {i}", tools=("lookup",) * 20, tool_spans=True) for i in range(6)]
    send(client, make_key("ingest", project="a"), big)
    send(client, make_key("ingest", project="b"), [agent_run("where is my refund?")])
    report = derive_pending(
        engine, now=utcnow() + timedelta(seconds=60), batch_size=256, batch_spans=40,
        text_embeddings=False, time_budget_s=0.0,
    )  # fmt: skip
    # 20 spans each for A (at least one trace, however large) and B: A's first trace and B's
    assert report.traces == 2
    with engine.connect() as conn:
        names = set(
            conn.scalars(
                select(Project.name)
                .join(Trace, Trace.project_id == Project.id)
                .where(Trace.derived_at.is_not(None))
            )
        )
    assert names == {"a", "b"}
