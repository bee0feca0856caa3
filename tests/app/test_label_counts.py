"""A sampled window's FM-4 label coverage and delays count every trace of it
(app/monitors/windows/label_counts.py), on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db import write_session
from app.monitors.runner import run_monitor
from app.monitors.windows import label_counts
from app.monitors.windows import trace_window as windows
from app.scores import roles as score_roles
from detectors.ground_truth import label_coverage
from detectors.ground_truth.label_coverage import LabelCounts
from tests.app.engine_helpers import T0, add_monitor, ingest, setup_project

N = 420
START, END = T0, T0 + timedelta(hours=2)
# The reference pinned before the data: what counts here is the current window (a rolling
# one gives no verdict before 5 h of data).
WINDOWS = {
    "current_window_seconds": 7200,
    "reference_window_seconds": 3600,
    "reference_start": (START - timedelta(hours=3)).isoformat(),
    "reference_end": (START - timedelta(hours=2)).isoformat(),
}


def _iso(dt: Any) -> str:
    return str(dt.isoformat())


def _events(i: int) -> list[dict[str, Any]]:
    """Trace i of the window, and the scores that make its cohort and label differ."""
    start = T0 + timedelta(seconds=16 * i)
    ended = start + timedelta(seconds=5)
    attributes = {"task_type": ("refund", "billing")[i % 2]} if i % 5 else {}
    out: list[dict[str, Any]] = [{"id": f"t{i}", "type": "trace", "body": {
        "trace_id": f"t{i}", "agent": "bot", "agent_version": f"v{i % 3}",
        "started_at": _iso(start), "ended_at": _iso(ended), "attributes": attributes,
        "source": "eval" if i % 25 == 0 else "production"}}]  # fmt: skip

    def score(name: str, kind: str, source: str, after_s: float) -> None:
        out.append({"id": f"{name}.{source}.{i}.{after_s}", "type": "score", "body": {
            "trace_id": f"t{i}", "name": name, "value": 1.0, "kind": kind, "source": source,
            "created_at": _iso(ended + timedelta(seconds=after_s))}})  # fmt: skip

    if i % 3 == 0:
        score("correct", "true", "delayed", 60.0 * (i % 7))  # a label, 0-6 minutes late
    if i % 3 == 1 and i % 2:
        score("correct", "true", "online", 30.0)  # not a label source
    if i % 11 == 0:
        score("correct", "true", "human", 3 * 3600.0)  # arrives after the run's now
    if i % 13 == 0:
        score("resolved", "proxy", "human", 90.0)  # a label by the project's roles
    if i % 17 == 0:
        score("correct", "true", "human", 300.0 + i)  # a second, later label
    return out


def _fill(engine: Engine) -> int:
    pid = setup_project(engine, "p1")
    with write_session(engine) as s:
        score_roles.put_roles(
            s,
            project_id=pid,
            roles=score_roles.ScoreRoles.from_mapping({"resolved": "true"}, ["delayed", "human"]),
        )
    events = [e for i in range(N) for e in _events(i)]
    for lo in range(0, len(events), 1000):
        ingest(engine, pid, events[lo : lo + 1000])
    return pid


def _sel(engine: Engine, pid: int, max_traces: int) -> windows.TraceSelection:
    with Session(engine) as s:
        roles = score_roles.get_roles(s, project_id=pid)
    return windows.TraceSelection(project_id=pid, max_traces=max_traces, roles=roles)


def _expected(engine: Engine, pid: int) -> list[dict[str, Any]]:
    """Coverage over the records of the whole window, loaded unsampled."""
    with Session(engine) as s:
        whole = windows.load_trace_window(
            s, _sel(engine, pid, 10_000), start=START, end=END, as_of=END, with_embeddings=False
        )
    assert whole.sample.rate == 1.0
    production = [r for r in whole.records if r.source == "production"]
    return label_coverage(production, END.timestamp())


def test_counted_labels_equal_the_whole_windows_records(engine: Engine) -> None:
    pid = _fill(engine)
    expected = _expected(engine, pid)
    with Session(engine) as s:
        counts = label_counts.count_labels(
            s, _sel(engine, pid, 50), start=START, end=END, as_of=END
        )
    assert isinstance(counts, LabelCounts)
    assert counts.traces == N - len(range(0, N, 25))  # every production trace, no eval one
    got = label_coverage([], END.timestamp(), counts=counts)
    assert got == expected
    # The cohorts the fixture set up, and labels that count: a delayed or human `true`
    # score, or `resolved` by the role; never an online one or one created after now.
    assert {(r["agent_version"], r["task_type"]) for r in got} == {
        (f"v{v}", t) for v in range(3) for t in ("", "refund", "billing")
    }
    labeled = {i for i in range(N) if i % 25 and (i % 3 == 0 or i % 13 == 0 or i % 17 == 0)}
    assert sum(r["n_labeled"] for r in got) == len(labeled)
    assert all(r["label_delay_median_s"] is not None for r in got)


def test_a_sampled_fm4_run_reports_coverage_over_every_trace(engine: Engine) -> None:
    pid = _fill(engine)
    expected = _expected(engine, pid)
    mid = add_monitor(
        engine, pid, "FM-4",
        selection={"max_traces": 60, **WINDOWS},
    )  # fmt: skip
    run = run_monitor(engine, monitor_id=mid, now=END)
    assert run is not None
    sample = run.evidence["window_sample"]["current"]
    assert sample["production_rate"] < 1.0 and sample["production_loaded"] < N / 3
    assert sample["label_counts"] == {"traces_counted": N - len(range(0, N, 25))}
    assert run.evidence["coverage_counted_traces"] == "whole window"
    assert run.evidence["cohorts"] == expected
    n_labeled = sum(r["n_labeled"] for r in expected)
    n_traces = sum(r["n_traces"] for r in expected)
    assert abs(run.evidence["label_coverage"] - n_labeled / n_traces) < 1e-12

    # Unsampled, the same figures come from the records themselves.
    small = add_monitor(
        engine, pid, "FM-4", name="whole",
        selection=WINDOWS,
    )  # fmt: skip
    whole = run_monitor(engine, monitor_id=small, now=END)
    assert whole is not None
    assert whole.evidence["coverage_counted_traces"] == "records"
    assert "label_counts" not in whole.evidence["window_sample"]["current"]
    assert whole.evidence["cohorts"] == expected
