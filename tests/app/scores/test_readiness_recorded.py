"""Readiness from the counts a run kept: no counting on the page while the run is recent,
the same answer as counting, and counting again once it is not."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import event, update

from app.models import DetectorRun
from tests.app.scores.test_readiness import NOW, ingest, plain_llm_traces, readiness_at, setup
from tests.conftest import auth


def span_counts(client: Any, call: Any) -> tuple[Any, int]:
    """``call()``'s answer and how many statements it sent that read the spans table."""
    statements: list[str] = []
    app_engine = client.app.state.engine

    def seen(_conn: Any, _cursor: Any, stmt: str, *_: Any) -> None:
        statements.append(stmt)

    event.listen(app_engine, "before_cursor_execute", seen)
    try:
        answer = call()
    finally:
        event.remove(app_engine, "before_cursor_execute", seen)
    return answer, sum("FROM spans" in s for s in statements)


def test_a_recent_run_s_counts_are_read_not_counted_again(client, make_key, engine):
    admin, reader, monitors = setup(client, make_key)
    # The project's first trace 9 h back: a young project's runs count nothing.
    ingest(client, admin, plain_llm_traces(1, start=NOW - timedelta(hours=9), prefix="first"))
    ingest(client, admin, plain_llm_traces(90, start=NOW - timedelta(minutes=100)))
    fm1 = monitors["FM-1"]
    r = client.post(
        f"/api/v1/monitors/{fm1}/run", headers=auth(admin), json={"now": NOW.isoformat()}
    )
    assert r.status_code == 200, r.text
    with engine.connect() as conn:
        kept = conn.execute(
            DetectorRun.__table__.select().where(DetectorRun.monitor_id == fm1)
        ).one()
    assert kept.readiness_counts["counts"]["traces"] == 90
    assert kept.readiness_counts["end"].startswith(NOW.isoformat()[:19])

    # A minute later: the run's window, its counts, no span read.
    later = NOW + timedelta(minutes=1)
    from_run, reads = span_counts(client, lambda: readiness_at(client, reader, fm1, later))
    assert reads == 0
    assert from_run["counted_by_run"]["id"] == kept.id
    assert from_run["window"]["end"].startswith(NOW.isoformat()[:19])
    assert from_run["traces"] == 90

    # The same answer as counting that window on request (the run's counts dropped).
    with engine.begin() as conn:
        conn.execute(update(DetectorRun).values(readiness_counts=None))
    counted, reads = span_counts(client, lambda: readiness_at(client, reader, fm1, NOW))
    assert reads >= 1 and counted.get("counted_by_run") is None
    for field in ("status", "traces", "counted_traces", "scores", "needs", "last_run"):
        assert from_run[field] == counted[field], field


def test_no_recent_run_means_counting(client, make_key, engine):
    admin, reader, monitors = setup(client, make_key)
    ingest(client, admin, plain_llm_traces(90, start=NOW - timedelta(minutes=100)))
    fm2 = monitors["FM-2"]
    # No run at all: counted.
    answer, reads = span_counts(client, lambda: readiness_at(client, reader, fm2, NOW))
    assert reads >= 1 and answer.get("counted_by_run") is None
    r = client.post(
        f"/api/v1/monitors/{fm2}/run", headers=auth(admin), json={"now": NOW.isoformat()}
    )
    assert r.status_code == 200, r.text
    # Two intervals (15 min each) and more after the run: its window is stale, counted.
    stale = NOW + timedelta(minutes=31)
    answer, reads = span_counts(client, lambda: readiness_at(client, reader, fm2, stale))
    assert reads >= 1 and answer.get("counted_by_run") is None
    assert answer["window"]["end"].startswith(stale.isoformat()[:19])
    # A run from the future of the asked time does not describe it either.
    past = NOW - timedelta(minutes=5)
    answer, reads = span_counts(client, lambda: readiness_at(client, reader, fm2, past))
    assert reads >= 1 and answer.get("counted_by_run") is None
    # Another window length (the policy changed): counted.
    sel = {"current_window_seconds": 3 * 3600, "reference_window_seconds": 6 * 3600}
    r = client.patch(f"/api/v1/monitors/{fm2}", headers=auth(admin), json={"selection": sel})
    assert r.status_code == 200, r.text
    answer, reads = span_counts(client, lambda: readiness_at(client, reader, fm2, NOW))
    assert reads >= 1 and answer.get("counted_by_run") is None
