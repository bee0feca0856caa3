"""A sampled window's step statistics count every trace by its stored step profile
(app/monitors/windows/profiles.py), on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from app.models import Trace
from app.monitors.windows import profiles as step_profiles
from app.monitors.windows import rows as window_rows
from app.monitors.windows import trace_window as windows
from detectors.step_profiles import ProfileCounts, RecordWindow
from tests.app.engine_helpers import T0, ingest, setup_project

N = 600


def _events(i: int, *, steps: int) -> list[dict[str, Any]]:
    start = T0 + timedelta(seconds=10 * i)
    out: list[dict[str, Any]] = [{"id": f"t{i}", "type": "trace", "body": {
        "trace_id": f"t{i}", "agent": "bot", "started_at": start.isoformat(),
        "ended_at": (start + timedelta(seconds=5)).isoformat(),
        "source": "eval" if i % 30 == 0 else "production"}}]  # fmt: skip
    for k in range(steps):
        out.append({"id": f"s{i}.{k}", "type": "span", "body": {
            "trace_id": f"t{i}", "span_id": f"{i}-{k}", "step_index": k,
            "kind": "tool" if k % 2 == 0 else "llm", "name": f"step{k}",
            "status": "error" if (i * 7 + k) % 5 == 0 else "ok",
            "started_at": (start + timedelta(seconds=k)).isoformat()}})  # fmt: skip
    return out


def _load(engine: Engine, pid: int, max_traces: int) -> windows.TraceWindow:
    with Session(engine) as session:
        return windows.load_trace_window(
            session, windows.TraceSelection(project_id=pid, max_traces=max_traces),
            start=T0, end=T0 + timedelta(hours=3), with_embeddings=False, profile_writer=engine,
        )  # fmt: skip


def test_sampled_window_counts_every_trace_by_its_stored_profile(engine: Engine) -> None:
    pid = setup_project(engine, "p1")
    events = [e for i in range(N) for e in _events(i, steps=2 + i % 4)]
    for lo in range(0, len(events), 1000):
        ingest(engine, pid, events[lo : lo + 1000])
    whole = _load(engine, pid, max_traces=10_000)
    assert whole.profiles is None and not isinstance(whole.records, RecordWindow)
    expected = ProfileCounts.of(whole.records)

    sampled = _load(engine, pid, max_traces=100)
    assert sampled.sample.rate < 1.0 and len(sampled.records) < N / 2
    assert isinstance(sampled.records, RecordWindow)
    assert sampled.records.step_profiles == expected and expected.traces == N
    assert sampled.profiles is not None and sampled.profiles.computed == N
    assert sampled.evidence()["step_profiles"]["traces_counted"] == N
    with Session(engine) as s:
        stored = {
            r.trace_id: r.step_profile
            for r in s.execute(select(Trace.trace_id, Trace.step_profile))
        }
    assert len(stored) == N and None not in stored.values()
    assert stored["t0"] == "Ts"  # tool failed ((0*7+0) % 5 == 0), then an ok llm step

    # Stored: the next run computes none and counts the same.
    again = _load(engine, pid, max_traces=100)
    assert again.profiles is not None and again.profiles.computed == 0
    assert again.records.step_profiles == expected  # type: ignore[attr-defined]

    # A trace that grows loses its profile at ingest, and is counted as it is now.
    ingest(engine, pid, [{"id": "late", "type": "span", "body": {
        "trace_id": "t1", "span_id": "1-late", "step_index": 9, "kind": "llm",
        "name": "late", "status": "error", "started_at": T0.isoformat()}}])  # fmt: skip
    with Session(engine) as s:
        assert s.scalar(select(Trace.step_profile).where(Trace.trace_id == "t1")) is None
    grown = _load(engine, pid, max_traces=100)
    assert grown.profiles is not None and grown.profiles.computed == 1
    counts = grown.profiles.counts.counts
    assert (
        counts[("production", stored["t1"] + "S")]
        == expected.counts.get(("production", stored["t1"] + "S"), 0) + 1
    )


def test_a_profile_computed_before_the_trace_grew_is_not_stored(engine: Engine) -> None:
    pid = setup_project(engine, "p1")
    ingest(engine, pid, _events(1, steps=2))
    with Session(engine) as s:
        key = dict(
            s.execute(
                select(Trace.project_id, Trace.trace_id, Trace.source, Trace.step_profile,
                       Trace.updated_at)
            ).mappings().one()
        )  # fmt: skip
        # The trace grows after its key was read (ingest moves updated_at on).
        s.execute(update(Trace).values(updated_at=key["updated_at"] + timedelta(seconds=1)))
        s.commit()
    with Session(engine) as s:
        tally = step_profiles.count_window(
            [key], sampled=set(), write_engine=engine,
            load_chunk=lambda ids: window_rows.chunk_records(
                s, ids, project_id=pid, as_of=None, scores=False),
        )  # fmt: skip
    assert tally.counted == {("production", "ts"): 1}  # counted as read...
    with Session(engine) as s:  # ...but not stored over the grown trace
        assert s.scalar(select(Trace.step_profile)) is None


def test_the_derive_job_stores_profiles_so_the_cycle_computes_none(engine: Engine) -> None:
    from app.derive.job import derive_pending
    from app.models.base import utcnow

    pid = setup_project(engine, "p1")
    events = [e for i in range(200) for e in _events(i, steps=1 + i % 3)]
    ingest(engine, pid, events)
    report = derive_pending(engine, now=utcnow(), settle_seconds=0.0, text_embeddings=False)
    assert report.traces == 200
    with Session(engine) as s:
        stored = {
            r.trace_id: r.step_profile
            for r in s.execute(select(Trace.trace_id, Trace.step_profile))
        }
        expected = windows.step_profiles_of(s, project_id=pid, trace_ids=sorted(stored))
    assert stored == expected and stored["t0"] == "T"
    sampled = _load(engine, pid, max_traces=50)
    assert sampled.profiles is not None and sampled.profiles.computed == 0
    assert sampled.profiles.counts.traces == 200
