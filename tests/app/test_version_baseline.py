"""``reference_version``: the baseline is the traffic of the version before the one the
current window runs (its dominant version), or of a named one; no such version is
insufficient data with the reason. Real runner and storage, both databases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.ingest.events import validate_events
from app.ingest.store import write_events
from app.models import DetectorRun
from app.monitors.runner import run_monitor
from detectors.result import DetectorResult
from tests.app.engine_helpers import add_monitor, setup_project
from tests.conftest import auth

T0 = datetime(2025, 3, 3, 12, tzinfo=UTC)  # v2 takes over here
MINUTE = timedelta(minutes=1)
SEL = {"current_window_seconds": 3600, "reference_window_seconds": 7200}


class VersionRecorder:
    """Says which versions each window held, and never fires."""

    needs: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.seen: list[tuple[set[str], set[str]]] = []

    def test(self, reference: Any, current: Any, *, now: float | None = None) -> DetectorResult:
        self.seen.append(({r.agent_version for r in reference}, {r.agent_version for r in current}))
        return DetectorResult("FM-2", 0.0, 1.0, 0.5, False, {"n": len(reference)})


def _ingest(engine: Engine, pid: int) -> None:
    """v1 every 5 min from T0 - 10 h until T0; v2 from T0 - 20 min (a rollout) to T0 + 2 h;
    a trace of another agent on v0 before both (another agent's versions do not count)."""
    events: list[dict[str, Any]] = []

    def trace(name: str, at: datetime, version: str, agent: str = "a") -> None:
        body = {"trace_id": name, "agent": agent, "agent_version": version,
                "started_at": at.isoformat(), "ended_at": (at + MINUTE).isoformat()}  # fmt: skip
        events.append({"id": name, "type": "trace", "body": body})

    for i in range(-120, 0):
        trace(f"v1-{i}", T0 + 5 * i * MINUTE, "v1")
    for i in range(-4, 24):
        trace(f"v2-{i}", T0 + 5 * i * MINUTE, "v2")
    trace("other", T0 - timedelta(hours=20), "v0", agent="b")
    valid, rejected = validate_events(events)
    assert not rejected
    write_events(engine, project_id=pid, events=valid)


def _run(engine: Engine, mid: int, now: datetime, det: VersionRecorder) -> DetectorRun:
    run = run_monitor(engine, monitor_id=mid, now=now, detector_factory=lambda m, p: det)
    assert run is not None
    return run


def test_reference_is_the_previous_versions_traffic(engine: Engine) -> None:
    pid = setup_project(engine)
    _ingest(engine, pid)
    det = VersionRecorder()
    for setting in ("previous", "v1"):
        sel = {**SEL, "agent": "a", "reference_version": setting}
        mid = add_monitor(engine, pid, "FM-2", name=f"vs {setting}", selection=sel)
        run = _run(engine, mid, T0 + timedelta(hours=1), det)
        assert run.status == "ok"
        assert det.seen[-1] == ({"v1"}, {"v2"})
        last_v1 = T0 - 5 * MINUTE  # the newest v1 trace before the current window
        assert run.reference_end == last_v1 + timedelta(microseconds=1)
        assert run.reference_end - run.reference_start == timedelta(hours=2)
        assert run.n_reference == 24 and run.n_current == 12
        b = run.evidence["baseline"]
        assert (b["mode"], b["current_version"], b["reference_version"]) == (
            "version", "v2", "v1",
        )  # fmt: skip


def test_rollout_reads_the_dominant_version_and_no_previous_is_insufficient(
    engine: Engine,
) -> None:
    pid = setup_project(engine)
    _ingest(engine, pid)
    det = VersionRecorder()
    sel = {**SEL, "agent": "a", "reference_version": "previous"}
    mid = add_monitor(engine, pid, "FM-2", selection=sel)
    # [T0 - 45 min, T0 + 15 min): 9 v1 traces, 7 v2 traces: the window runs v1, the first.
    run = _run(engine, mid, T0 + 15 * MINUTE, det)
    assert run.status == "insufficient_data" and not run.fired and det.seen == []
    assert run.evidence["reason"] == "no agent version was seen before 'v1', the current window's"
    # Later the window runs v2 and the comparison is v2 against v1 only.
    run = _run(engine, mid, T0 + 30 * MINUTE, det)
    assert run.status == "ok" and det.seen == [({"v1"}, {"v2"})]


def test_missing_versions_are_insufficient_with_the_reason(engine: Engine) -> None:
    pid = setup_project(engine)
    _ingest(engine, pid)
    det = VersionRecorder()
    named = add_monitor(engine, pid, "FM-2", selection={**SEL, "reference_version": "v9"})
    run = _run(engine, named, T0 + timedelta(hours=1), det)
    assert run.status == "insufficient_data"
    assert run.evidence["reason"] == "agent version 'v9' has no traces before the current window"
    quiet = add_monitor(engine, pid, "FM-2", name="later",
                        selection={**SEL, "reference_version": "previous"})  # fmt: skip
    run = _run(engine, quiet, T0 + timedelta(days=2), det)  # nothing in the window
    assert run.evidence["reason"] == "the current window's traces carry no agent_version"
    assert det.seen == []


def test_reference_version_is_validated(client: TestClient, make_key: Any) -> None:
    key = make_key(role="admin")

    def create(selection: dict[str, Any]) -> Any:
        body = {"name": "m", "failure_mode": "FM-2", "selection": selection}
        return client.post("/api/v1/monitors", headers=auth(key), json=body)

    r = create({"reference_version": "previous", "reference_start": "2025-03-01T00:00:00Z",
                "reference_end": "2025-03-02T00:00:00Z"})  # fmt: skip
    assert r.status_code == 422 and "reference_version" in r.text
    for bad in ("", "v" * 65, 3):
        r = create({"reference_version": bad})
        assert r.status_code == 422 and "reference_version" in r.text
    r = create({"reference_version": "previous"})
    assert r.status_code == 201 and r.json()["selection"]["reference_version"] == "previous"
