"""Monitor windows at volume: a stratified, deterministic sample over the whole window,
loaded once per scheduler cycle (app/monitors/windows/sampling.py, app/monitors/windows/cache.py)."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.ingest.events import validate_events
from app.ingest.store import write_events
from app.monitors import runner
from app.monitors.defaults import create_defaults
from app.monitors.windows import trace_window as windows
from app.monitors.windows import vectors as vector_windows
from app.monitors.windows.cache import WindowCache
from app.monitors.windows.sampling import pair_key, plan_sample
from app.scheduler.service import SchedulerService
from app.settings import Settings
from tests.app.engine_helpers import T0, setup_project


def _trace(i: int, *, source: str = "production", input_hash: str | None = None,
           counterfactual_of: str | None = None, minute: float = 0.0) -> dict[str, Any]:  # fmt: skip
    body: dict[str, Any] = {
        "trace_id": f"t{i}",
        "agent": "bot",
        "started_at": (T0 + timedelta(minutes=minute)).isoformat(),
        "ended_at": (T0 + timedelta(minutes=minute, seconds=1)).isoformat(),
        "source": source,
    }
    if input_hash:
        body["input_hash"] = input_hash
    if counterfactual_of:
        body["counterfactual_of"] = counterfactual_of
    return {"id": f"e{i}", "type": "trace", "body": body}


def _write(engine: Engine, pid: int, events: list[dict[str, Any]]) -> None:
    valid, rejected = validate_events(events)
    assert not rejected
    write_events(engine, project_id=pid, events=valid)


@pytest.fixture
def mixed_window(engine: Engine) -> tuple[int, list[dict[str, Any]]]:
    """2,000 production traces over 100 minutes, with eval traces, repeated-input groups
    and counterfactual pairs mixed in."""
    pid = setup_project(engine, "p1")
    events = []
    for i in range(2000):
        minute = i * 0.05
        if i % 50 == 0:
            events.append(_trace(i, source="eval", input_hash=f"evalset{i % 7}", minute=minute))
        elif i % 10 == 1:  # groups of ~5 repeats of one input
            events.append(_trace(i, input_hash=f"h{i // 50}", minute=minute))
        elif i % 10 == 3:  # the shadow replay of the previous production trace
            events.append(_trace(i, counterfactual_of=f"t{i - 1}", minute=minute))
        else:
            events.append(_trace(i, minute=minute))
    _write(engine, pid, events)
    return pid, events


def _load(engine: Engine, pid: int, max_traces: int) -> windows.TraceWindow:
    sel = windows.TraceSelection(project_id=pid, max_traces=max_traces)
    with Session(engine) as session:
        return windows.load_trace_window(
            session, sel, start=T0, end=T0 + timedelta(hours=2), with_embeddings=False
        )


def test_sample_keeps_eval_groups_and_pairs_whole_over_the_whole_window(
    engine: Engine, mixed_window: tuple[int, list[dict[str, Any]]]
) -> None:
    pid, events = mixed_window
    full = _load(engine, pid, max_traces=10_000)
    assert len(full.records) == 2000 and full.sample.rate == 1.0
    window = _load(engine, pid, max_traces=400)
    kept = {r.trace_id for r in window.records}
    rows = {e["body"]["trace_id"]: {"trace_id": e["body"]["trace_id"], **e["body"]} for e in events}

    # Every eval trace, and about the asked number of production traces.
    evals = {t for t, b in rows.items() if b["source"] == "eval"}
    assert evals <= kept and window.sample.eval_kept == len(evals) == 40
    assert window.sample.rate == pytest.approx(400 / 1960)
    assert 300 <= window.sample.production_kept <= 500
    # Counterfactual pairs are kept or dropped whole.
    pairs: dict[str, set[bool]] = {}
    for t, b in rows.items():
        if b["source"] != "eval":
            pairs.setdefault(pair_key(b), set()).add(t in kept)
    assert all(len(v) == 1 for v in pairs.values())
    shadows = [t for t, b in rows.items() if b.get("counterfactual_of") in kept]
    assert shadows and all(t in kept for t in shadows)
    # Spread over the whole window, not the newest rows: each 20-minute fifth is sampled
    # near the rate (the old "newest N" rule kept only the last 20 minutes).
    fifths = Counter(int((r.started_at - T0.timestamp()) // 1200) for r in window.records)
    assert sorted(fifths) == [0, 1, 2, 3, 4]
    assert min(fifths.values()) >= 50
    # The same traces every time: the sample is a hash of the group, not random.
    assert kept == {r.trace_id for r in _load(engine, pid, max_traces=400).records}
    assert window.sample.evidence()["weight"] == pytest.approx(1960 / 400, rel=1e-5)


def test_long_tailed_input_groups_do_not_decide_the_sample_size() -> None:
    """450 inputs with Zipf-like repeats (as the scenario generator makes): the number kept
    stays near the target, and repeats of the big inputs stay together in proportion."""
    rng = np.random.default_rng(5)
    weights = 1.0 / np.arange(1, 451) ** 1.1
    inputs = rng.choice(450, size=200_000, p=weights / weights.sum())
    rows = [
        {"trace_id": f"t{i}", "source": "production", "input_hash": f"h{k}",
         "counterfactual_of": None}
        for i, k in enumerate(inputs)
    ]  # fmt: skip
    plan = plan_sample(rows, max_production=20_000)
    assert abs(plan.production_kept - 20_000) < 1_500
    ids = set(plan.trace_ids)
    kept = Counter(r["input_hash"] for r in rows if r["trace_id"] in ids)
    assert kept["h0"] > 100  # the biggest input's repeats are there, many of them


def test_group_hash_sample_estimates_shares_without_bias() -> None:
    """A label share among sampled traces matches the window's (labels are not strata)."""
    rng = np.random.default_rng(3)
    rows = [
        {"trace_id": f"t{i}", "source": "production", "input_hash": None,
         "counterfactual_of": None, "labeled": bool(rng.random() < 0.3)}
        for i in range(50_000)
    ]  # fmt: skip
    plan = plan_sample(rows, max_production=5_000)
    kept = set(plan.trace_ids)
    share = np.mean([r["labeled"] for r in rows if r["trace_id"] in kept])
    assert abs(plan.production_kept - 5_000) < 300
    assert share == pytest.approx(np.mean([r["labeled"] for r in rows]), abs=0.02)


def test_embedding_window_beyond_the_cap_is_sampled_over_the_whole_window(engine: Engine) -> None:
    pid = setup_project(engine, "p1")
    events = []
    for i in range(600):
        vec = [float(i), 1.0]  # the first coordinate says when it was sent
        events.append({"id": f"v{i}", "type": "embedding",
                       "body": {"stream": "vlm.image", "vector": vec}})  # fmt: skip
    _write(engine, pid, events)
    with Session(engine) as session:
        far = T0 + timedelta(days=3650)
        got = vector_windows.load_embedding_window(
            session, project_id=pid, stream="vlm.image", start=T0 - timedelta(days=3650),
            end=far, max_vectors=200,
        )  # fmt: skip
        again = vector_windows.load_embedding_window(
            session, project_id=pid, stream="vlm.image", start=T0 - timedelta(days=3650),
            end=far, max_vectors=200,
        )  # fmt: skip
    assert 140 <= len(got) <= 260
    order = got[:, 0]
    assert (np.diff(order) > 0).all()  # arrival order
    assert order.min() < 100 and order.max() > 500  # oldest and newest parts both there
    assert np.array_equal(got, again)


@pytest.mark.slow
def test_one_cycle_loads_each_window_once_with_the_same_verdicts(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.scenarios import Injection, generate_workload

    pid = setup_project(engine, "p1")
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
        monitors = create_defaults(session, project_id=pid)
        session.commit()
        ids = [m.id for m in monitors]
    now = T0 + timedelta(hours=8)
    alone = {mid: runner.run_monitor(engine, monitor_id=mid, now=now) for mid in ids}

    loads: list[Any] = []
    real = windows.load_trace_window

    def counting(*args: Any, **kwargs: Any) -> windows.TraceWindow:
        loads.append((kwargs["start"], kwargs["end"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(windows, "load_trace_window", counting)
    from app.monitors.windows import history

    starts: list[int] = []
    real_start = history.history_start

    def counting_start(*args: Any, **kwargs: Any) -> Any:
        starts.append(kwargs["project_id"])
        return real_start(*args, **kwargs)

    monkeypatch.setattr(history, "history_start", counting_start)
    service = SchedulerService(Settings(database_url="sqlite://"), engine, None, clock=lambda: now)
    with engine.begin() as conn:  # every monitor due again
        from sqlalchemy import update

        from app.models import Monitor

        conn.execute(update(Monitor).values(next_run_at=None))
    shared = {run.monitor_id: run for run in service.tick()}
    # Six trace monitors share two windows: two loads (vectors attached once, not
    # reloaded); FM-4 and OUTCOME, 8 h windows on a day's baseline, are 32 h from their
    # first verdict and read nothing.
    assert len(loads) == 2 and len(set(loads)) == 2
    assert starts == [pid]  # where the data begin: asked once per project and cycle
    assert set(shared) == set(ids)
    for mid in ids:
        a, b = alone[mid], shared[mid]
        assert a is not None
        assert (a.status, a.fired, a.statistic, a.n_current, a.n_reference) == (
            b.status, b.fired, b.statistic, b.n_current, b.n_reference
        )  # fmt: skip
    fired = {b.failure_mode for b in shared.values() if b.fired}
    assert "FM-2" in fired

    # The next cycle, 15 minutes on, reuses the steps of the traces both cycles read
    # (app/monitors/windows/step_cache.py) and gives the runs a cold load gives.
    assert len(service.runner.step_cache) > 0
    hits = service.runner.step_cache.hits
    now = now + timedelta(minutes=15)
    monkeypatch.setattr(windows, "load_trace_window", real)
    cold = {mid: runner.run_monitor(engine, monitor_id=mid, now=now) for mid in ids}
    with engine.begin() as conn:
        conn.execute(update(Monitor).values(next_run_at=None))
    warm = {run.monitor_id: run for run in service.tick()}
    assert service.runner.step_cache.hits - hits > 0
    for mid in ids:
        a, b = cold[mid], warm[mid]
        assert a is not None
        assert (a.status, a.fired, a.statistic, a.p_value, a.n_current, a.n_reference) == (
            b.status, b.fired, b.statistic, b.p_value, b.n_current, b.n_reference
        )  # fmt: skip


def test_cache_attaches_vectors_once_and_serves_later_callers() -> None:
    cache = WindowCache(now=T0)
    calls: list[str] = []
    key = (windows.TraceSelection(project_id=1), T0, T0, T0)
    empty = windows.TraceWindow([], plan_sample([], max_production=1))

    def load() -> windows.TraceWindow:
        calls.append("load")
        return empty

    def attach(w: windows.TraceWindow) -> windows.TraceWindow:
        calls.append("attach")
        return w

    for with_embeddings in (False, True, True, False):
        cache.trace_window(key, with_embeddings=with_embeddings, load=load, attach=attach)
    assert calls == ["load", "attach"] and (cache.loads, cache.hits) == (1, 3)


def test_steps_carry_only_the_attributes_detectors_read(engine: Engine) -> None:
    pid = setup_project(engine, "p1")
    attrs = {"partial": True, "result_count": 0, "gen_ai.input.messages": "x" * 5000}
    _write(engine, pid, [
        _trace(1),
        {"id": "s1", "type": "span", "body": {
            "trace_id": "t1", "span_id": "a", "kind": "tool", "tool_name": "search",
            "started_at": T0.isoformat(), "attributes": attrs}},
    ])  # fmt: skip
    [record] = _load(engine, pid, max_traces=10).records
    [step] = record.steps
    assert dict(step.attributes) == {"partial": True, "result_count": 0}


def test_a_window_read_in_chunks_gives_every_trace_its_own_steps_and_scores_in_order(
    engine: Engine,
) -> None:
    """Records are built chunk by chunk (1,000 trace ids each) to bound the load's memory:
    a window over several chunks holds every trace once, with its own spans and scores,
    oldest first, whatever order the chunks came in."""
    pid = setup_project(engine, "p1")
    n = 2300
    events: list[dict[str, Any]] = []
    for i in range(n):
        minute = (n - i) * 0.04  # later ids start earlier: chunk order is not time order
        events.append(_trace(i, minute=minute))
        for k, kind in enumerate(("llm", "tool")):
            events.append({"id": f"s{i}.{k}", "type": "span", "body": {
                "trace_id": f"t{i}", "span_id": f"{i}-{k}", "kind": kind, "step_index": k,
                "name": f"step{k}", "status": "error" if (i + k) % 7 == 0 else "ok",
                "started_at": (T0 + timedelta(minutes=minute, seconds=k)).isoformat()}})  # fmt: skip
        events.append({"id": f"c{i}", "type": "score", "body": {
            "trace_id": f"t{i}", "name": "resolved", "value": i % 2, "kind": "true"}})  # fmt: skip
    for lo in range(0, len(events), 2000):
        _write(engine, pid, events[lo : lo + 2000])

    window = _load(engine, pid, max_traces=10_000)
    recs = window.records
    assert len(recs) == n and len({r.trace_id for r in recs}) == n
    assert [r.started_at for r in recs] == sorted(r.started_at for r in recs)
    for r in recs:
        i = int(r.trace_id[1:])
        assert [(s.index, s.kind, s.status) for s in r.steps] == [
            (k, kind, "error" if (i + k) % 7 == 0 else "ok")
            for k, kind in enumerate(("llm", "tool"))
        ]
        assert [(s.name, s.value) for s in r.scores] == [("resolved", float(i % 2))]
