"""Monitors over HTTP: CRUD, validation naming the field, defaults, runs, findings, and a
scenario workload with one failure mode injected raising an alert for that mode only."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel, ValidationError
from sqlalchemy import Engine

from app.api.routes.monitors import DefaultsRequest
from app.ingest.events import validate_events
from app.ingest.store import write_events
from app.monitors.schemas import MonitorCreate, MonitorPatch
from detectors.records import TraceRecord
from tests.app.engine_helpers import setup_project
from tests.conftest import auth

FAST = {  # fewer resamples than the defaults: valid p-values, quicker tests
    "FM-1": {"n_permutations": 399},
    "FM-2": {"n_permutations": 399},
    "FM-3": {"n_permutations": 399},
    "FM-4": {"n_bootstrap": 400},
    "FM-7": {"n_permutations": 399},
}


def test_crud_and_validation(client: TestClient, make_key: Any) -> None:
    h = auth(make_key(role="admin", project="p1"))
    body = {"name": "cascades", "failure_mode": "FM-2", "detector_params": {"alpha": 0.005},
            "selection": {"agent": "support", "current_window_seconds": 1800},
            "interval_seconds": 60, "severity": "critical", "labels": {"team": "ml"}}  # fmt: skip
    r = client.post("/api/v1/monitors", headers=h, json=body)
    assert r.status_code == 201, r.text
    m = r.json()
    assert m["selection"]["agent"] == "support" and m["selection"]["reference_window_seconds"] > 0
    assert (m["expected_days_between_false_alerts"], m["sequential"], m["for_seconds"]) == (
        30.0, True, 0,
    )  # fmt: skip
    for bad, field in (
        ({**body, "name": "x2", "detector_params": {"alpha": 2}}, "detector_params.alpha"),
        ({**body, "name": "x3", "detector_params": {"nope": 1}}, "detector_params.nope"),
        ({**body, "name": "x4", "failure_mode": "FM-9"}, "failure_mode"),
        (
            {**body, "name": "x5", "selection": {"current_window_seconds": 0}},
            "current_window_seconds",
        ),
        ({**body, "name": "x6", "severity": "loud"}, "severity"),
        (
            {**body, "name": "x7", "expected_days_between_false_alerts": 0},
            "expected_days_between_false_alerts",
        ),
        ({**body, "name": "x8", "selection": {"baseline_lag_seconds": -1}}, "baseline_lag_seconds"),
        ({**body, "name": "x9", "for_seconds": -5}, "for_seconds"),
        # The floor: one project's second-by-second monitors would fill every tick.
        ({**body, "name": "x10", "interval_seconds": 59}, "interval_seconds"),
        (body, "name"),
    ):
        r = client.post("/api/v1/monitors", headers=h, json=bad)
        assert r.status_code == 422 and field in r.json()["detail"], (field, r.text)
    r = client.patch(
        f"/api/v1/monitors/{m['id']}", headers=h, json={"detector_params": {"alpha": -1}}
    )
    assert r.status_code == 422 and "detector_params.alpha" in r.json()["detail"]
    r = client.patch(f"/api/v1/monitors/{m['id']}", headers=h, json={"interval_seconds": 1})
    assert r.status_code == 422
    assert r.json()["detail"] == (
        "body.interval_seconds: a monitor runs at most once a minute (60 s); got 1"
    )
    r = client.post("/api/v1/monitors/defaults", headers=h, json={"interval_seconds": 1})
    assert r.status_code == 422 and "interval_seconds" in r.json()["detail"]
    r = client.patch(
        f"/api/v1/monitors/{m['id']}", headers=h, json={"enabled": False, "interval_seconds": 120}
    )
    assert r.status_code == 200 and not r.json()["enabled"] and r.json()["interval_seconds"] == 120
    assert client.get(f"/api/v1/monitors/{m['id']}", headers=h).json()["name"] == "cascades"
    other = auth(make_key(role="admin", project="p2"))
    assert client.get(f"/api/v1/monitors/{m['id']}", headers=other).status_code == 404
    reader = auth(make_key(role="read", project="p1"))
    assert client.post("/api/v1/monitors", headers=reader, json=body).status_code == 403
    assert client.delete(f"/api/v1/monitors/{m['id']}", headers=h).status_code == 204
    assert client.get("/api/v1/monitors", headers=h).json()["monitors"] == []


def test_defaults_and_runs_on_empty_data(client: TestClient, make_key: Any) -> None:
    h = auth(make_key(role="admin", project="p1"))
    r = client.post("/api/v1/monitors/defaults", headers=h)
    assert r.status_code == 201
    modes = [m["failure_mode"] for m in r.json()["monitors"]]
    assert modes == [f"FM-{k}" for k in range(1, 8)] + ["OUTCOME", "SILENCE", "EARLY"]
    again = client.post("/api/v1/monitors/defaults", headers=h).json()["monitors"]
    assert [m["id"] for m in again] == [m["id"] for m in r.json()["monitors"]]  # idempotent
    mid = again[0]["id"]
    now = "2025-03-03T12:00:00Z"
    run = client.post(f"/api/v1/monitors/{mid}/run", headers=h, json={"now": now}).json()
    assert run["status"] == "insufficient_data" and not run["fired"]
    assert run["window_end"].startswith("2025-03-03T12:00:00")
    assert run["n_current"] == 0 and run["duration_ms"] >= 0
    client.post(f"/api/v1/monitors/{mid}/run", headers=h)
    runs = client.get(f"/api/v1/monitors/{mid}/runs", headers=h).json()["runs"]
    assert len(runs) == 2 and runs[0]["at"] < runs[1]["at"]  # oldest first, for charts
    assert client.get("/api/v1/alerts", headers=h).json()["alerts"] == []


def _ingest_scenario(
    engine: Engine, project_id: int, mode: str, start: datetime
) -> list[dict[str, Any]]:
    from pipelines.scenarios import Injection, generate_workload

    events = generate_workload(
        # 8 h: the defaults' first verdict needs 8 h of data (their reference a whole 4 h).
        0, start, timedelta(hours=8), 70.0,
        injections=[Injection(mode, start + timedelta(hours=6), "strong")],
        embedding_dim=16, images_per_hour=60.0,
    )  # fmt: skip
    valid, rejected = validate_events(events)
    assert not rejected
    for i in range(0, len(valid), 5000):
        write_events(engine, project_id=project_id, events=valid[i : i + 5000])
    return events


def test_injected_mode_alerts_for_that_mode_only(
    client: TestClient, engine: Engine, make_key: Any
) -> None:
    h = auth(make_key(role="admin", project="p1"))
    start = datetime(2025, 3, 3, tzinfo=UTC)
    _ingest_scenario(engine, setup_project(engine, "p1"), "FM-2", start)
    monitors = client.post(
        "/api/v1/monitors/defaults", headers=h, json={"detector_params": FAST}
    ).json()["monitors"]
    now = (start + timedelta(hours=8)).isoformat()
    runs = {
        m["failure_mode"]: client.post(
            f"/api/v1/monitors/{m['id']}/run", headers=h, json={"now": now}
        ).json()
        for m in monitors
    }
    assert all(r["status"] != "failed" for r in runs.values()), runs
    assert runs["FM-2"]["n_current"] > 80 and runs["FM-2"]["n_reference"] > 160
    alerts = client.get("/api/v1/alerts?state=firing", headers=h).json()["alerts"]
    assert [a["failure_mode"] for a in alerts] == ["FM-2"]
    findings = client.get("/api/v1/findings?failure_mode=FM-2", headers=h).json()["findings"]
    assert len(findings) == 1 and findings[0]["alert_id"] == alerts[0]["id"]
    assert client.get("/api/v1/findings?failure_mode=FM-6", headers=h).json()["findings"] == []
    # A repeat of the same run refreshes the alert instead of opening another.
    fm2 = next(m for m in monitors if m["failure_mode"] == "FM-2")
    client.post(f"/api/v1/monitors/{fm2['id']}/run", headers=h, json={"now": now})
    [alert] = client.get("/api/v1/alerts", headers=h).json()["alerts"]
    assert alert["count"] == 2


def _same_record(stored: TraceRecord, generated: TraceRecord) -> None:
    """Field by field; times to the microsecond (the database keeps microseconds)."""
    for f in dataclasses.fields(TraceRecord):
        a, b = getattr(stored, f.name), getattr(generated, f.name)
        if f.name in ("started_at", "ended_at"):
            assert a == pytest.approx(b, abs=1e-6), f.name
        elif f.name in ("input_embedding", "output_embedding"):
            assert (a is None) == (b is None) and (a is None or np.array_equal(a, b)), f.name
        elif f.name in ("steps", "scores"):
            assert len(a) == len(b), f.name
            for x, y in zip(a, b, strict=True):
                times = {k: pytest.approx(getattr(y, k), abs=1e-6) for k in TIME_FIELDS[f.name]}
                assert dataclasses.replace(x, **{k: 0.0 for k in times}) == dataclasses.replace(
                    y, **{k: 0.0 for k in times}
                ), f.name
                assert {k: getattr(x, k) for k in times} == times, f.name
        else:
            assert a == b, f.name


TIME_FIELDS = {"steps": ("started_at", "ended_at"), "scores": ("created_at",)}


def test_monitor_windows_and_scenario_converter_give_the_same_records_and_fm6_run(
    client: TestClient, engine: Engine, make_key: Any
) -> None:
    """One row mapper (detectors.records.from_rows) behind monitors and benches alike, and
    the registry's FM-6 detector on the loaded streams is what the default FM-6 monitor ran."""
    from sqlalchemy.orm import Session

    from app.monitors.decision.calibration import calibrated_params
    from app.monitors.defaults import DEFAULTS
    from app.monitors.record import jsonable
    from app.monitors.windows import trace_window as windows
    from app.monitors.windows import vectors as vector_windows
    from detectors.registry import build_detector, detector_parameters
    from pipelines.scenarios import as_of, events_to_records, window

    h = auth(make_key(role="admin", project="p1"))
    start = datetime(2025, 3, 3, tzinfo=UTC)
    pid = setup_project(engine, "p1")
    events = _ingest_scenario(engine, pid, "FM-6", start)
    now = start + timedelta(hours=8)
    lo, hi = now - timedelta(hours=2), now
    with Session(engine) as session:
        stored = windows.load_trace_records(
            session, windows.TraceSelection(project_id=pid), start=lo, end=hi, as_of=now
        )
    generated = as_of(
        window(events_to_records(events), lo.timestamp(), hi.timestamp()), now.timestamp()
    )
    assert len(stored) == len(generated) > 100
    assert any(r.steps and r.scores and r.output_embedding is not None for r in stored)
    for a, b in zip(stored, generated, strict=True):
        _same_record(a, b)

    monitors = client.post("/api/v1/monitors/defaults", headers=h).json()["monitors"]
    fm6 = next(m for m in monitors if m["failure_mode"] == "FM-6")
    run = client.post(
        f"/api/v1/monitors/{fm6['id']}/run", headers=h, json={"now": now.isoformat()}
    ).json()
    assert run["status"] == "ok" and run["fired"]
    # The run's reference is the lagged baseline (2 h lag, 4 h long), not the 4 h just
    # before the current window: the run reports which one it read.
    held = datetime.fromisoformat(run["evidence"]["baseline"]["reference_end"])
    assert datetime.fromisoformat(run["reference_end"]) == held == now - timedelta(hours=4)
    w = SimpleNamespace(**{k: datetime.fromisoformat(run[k]) for k in (
        "reference_start", "reference_end", "window_start", "window_end")})  # fmt: skip
    w.current_start, w.current_end = w.window_start, w.window_end
    with Session(engine) as session:
        names = vector_windows.embedding_streams(session, project_id=pid, stream=None, agent=None)
        ref, cur = (
            {s: vector_windows.load_embedding_window(session, project_id=pid, stream=s, start=a, end=b)
             for s in names}
            for a, b in ((w.reference_start, w.reference_end), (w.current_start, w.current_end))
        )  # fmt: skip
    params = next(d for d in DEFAULTS if d["failure_mode"] == "FM-6")["detector_params"]
    assert fm6["detector_params"] == params
    # The monitor ran at the alpha its 30-day false-alert budget gives a 15-minute interval,
    # halved: the sequential chart has the other half of the budget.
    params = calibrated_params(
        params, defaults=detector_parameters("FM-6"), ert_days=60, interval_seconds=900
    )
    result = build_detector("FM-6", params).test(ref, cur, now=now.timestamp())
    assert (result.statistic, result.threshold, result.p_value, result.fired) == (
        run["statistic"], run["threshold"], run["p_value"], run["fired"]
    )  # fmt: skip
    evidence = dict(run["evidence"])
    added = ("baseline", "sequential", "opened_by", "silent", "error_rate_alerts_open")
    for added_by_the_monitor in added:
        evidence.pop(added_by_the_monitor)
    assert jsonable(dict(result.evidence)) == evidence


@pytest.mark.parametrize(
    ("model", "seconds", "said"),
    [
        (MonitorCreate, 10, "a monitor runs at most once a minute (60 s); got 10"),
        (MonitorPatch, 59, "a monitor runs at most once a minute (60 s); got 59"),
        (DefaultsRequest, 8 * 86400, "a monitor runs at least once a week (604800 s); got 691200"),
    ],
)
def test_an_interval_out_of_bounds_is_refused_in_a_monitors_terms(
    model: type[BaseModel], seconds: int, said: str
) -> None:
    body = {"name": "m", "failure_mode": "FM-2"} if model is MonitorCreate else {}
    with pytest.raises(ValidationError) as refused:
        model.model_validate({**body, "interval_seconds": seconds})
    assert [(e["loc"], e["msg"]) for e in refused.value.errors()] == [(("interval_seconds",), said)]
    assert model.model_validate({**body, "interval_seconds": 60}).interval_seconds == 60
