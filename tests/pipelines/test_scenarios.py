"""The scenario generator: determinism, event schemas, realism, and clean injections."""

from __future__ import annotations

import base64
import functools
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from pipelines.scenarios import (
    FAILURE_MODES,
    IMAGE_STREAM,
    Injection,
    as_of,
    embedding_stream,
    events_to_records,
    generate_workload,
    window,
)
from pipelines.scenarios.shape import traffic_shape
from pipelines.scenarios.simulate import MAX_STEPS

START = datetime(2025, 1, 6, tzinfo=UTC)
AT = START + timedelta(hours=2.5)
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def workload(seed: int = 1, injections: list[Injection] | None = None, **kw: Any) -> list[dict]:
    kw.setdefault("traces_per_hour", 60)
    kw.setdefault("eval_per_agent_hour", 8)
    kw.setdefault("embedding_dim", 16)
    return generate_workload(seed, START, timedelta(hours=5), injections=injections or [], **kw)


@functools.cache
def strong(mode: str) -> list[dict]:
    return workload(injections=[Injection(mode, AT, "strong")])


@pytest.fixture(scope="module")
def clean() -> list[dict]:
    return workload()


def strip_id(obj: Any) -> Any:
    """Replace the scenario prefix of every id so runs of one seed can be compared."""
    if isinstance(obj, str):
        return re.sub(r"^[0-9a-f]{8}-", "X-", obj)
    if isinstance(obj, dict):
        return {k: strip_id(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [strip_id(v) for v in obj]
    return obj


def by_id(events: list[dict]) -> dict[str, dict]:
    return {strip_id(e["id"]): strip_id(e) for e in events}


def test_same_seed_same_events_and_unique_ids(clean: list[dict]) -> None:
    assert workload() == clean
    ids = [e["id"] for e in clean]
    assert len(ids) == len(set(ids))
    other = workload(seed=2)
    assert not set(ids) & {e["id"] for e in other}


def test_events_follow_the_native_ingest_schema(clean: list[dict]) -> None:
    enums = {
        "status": {"ok", "error"},
        "source": {"production", "eval", "shadow"},
        "kind_span": {"agent", "llm", "tool", "retrieval", "plan", "step"},
        "kind_score": {"proxy", "true", "guardrail"},
        "score_source": {"online", "delayed", "human", "eval"},
    }
    traces = {e["body"]["trace_id"] for e in clean if e["type"] == "trace"}
    for ev in clean:
        assert set(ev) == {"id", "type", "body"} and isinstance(ev["id"], str)
        b = ev["body"]
        if ev["type"] == "trace":
            assert ISO.match(b["started_at"]) and ISO.match(b["ended_at"])
            assert b["started_at"] <= b["ended_at"]
            assert b["status"] in enums["status"] and b["source"] in enums["source"]
            assert b["entry_point"] in {"api", "chat_ui", "batch"} and b["input_hash"]
            assert {"decision", "task_type", "confidence"} <= set(b["attributes"])
            assert b["counterfactual_of"] is None or b["counterfactual_of"] in traces
        elif ev["type"] == "span":
            assert b["trace_id"] in traces and b["kind"] in enums["kind_span"]
            assert b["status"] in enums["status"] and isinstance(b["step_index"], int)
            assert (b["error_type"] is not None) == (b["status"] == "error")
            assert (b["tool_name"] is not None) == (b["kind"] == "tool")
            assert ISO.match(b["started_at"]) and ISO.match(b["ended_at"])
        elif ev["type"] == "score":
            assert b["trace_id"] in traces and isinstance(b["value"], float)
            assert b["kind"] in enums["kind_score"] and b["source"] in enums["score_source"]
            assert ISO.match(b["created_at"])
        else:
            assert ev["type"] == "embedding"
            assert len(b["vector"]) == 16 and b["model"] and ISO.match(b["created_at"])
            assert (b.get("trace_id") is None) == (b["stream"] == IMAGE_STREAM)


def test_clean_baseline_looks_like_production_traffic(clean: list[dict]) -> None:
    records = events_to_records(clean)
    prod = [r for r in records if r.source == "production"]
    assert {r.agent for r in records} == {"support-agent", "research-agent", "billing-agent"}
    assert len({(r.agent, r.agent_version) for r in records}) >= 4
    assert Counter(r.source for r in records).keys() == {"production", "eval", "shadow"}
    # tool-calling traces shaped like real ones (bench/traffic_shape.py): ~18 steps and
    # ~6 tool calls a trace, model steps that almost never fail, tool calls that do, and
    # a failed call followed by more failed calls (retries) more often than an ok one
    assert all(5 <= len(r.steps) <= MAX_STEPS for r in records)
    assert 14 < np.mean([len(r.steps) for r in records]) < 22
    assert {s.tool_name for r in records for s in r.steps} - {None} >= {"search", "db_query"}
    shape = traffic_shape(prod)
    assert 4.5 < shape["tool_calls_per_trace"]["mean"] < 7.0
    assert 0.04 < shape["tool_call_failure_rate"] < 0.09
    assert shape["other_step_failure_rate"] < 0.01
    assert 0.1 < shape["traces_with_a_failed_tool_call"] < 0.3
    after_failed = shape["next_tool_call_fails_after_failed_tool"]
    assert after_failed > 3 * shape["next_tool_call_fails_after_ok_tool"]
    assert 0.9 < np.mean([r.status == "ok" for r in records]) < 0.995
    # repeated inputs over several entry points
    hashes = Counter(r.input_hash for r in prod)
    assert hashes.most_common(1)[0][1] >= 10
    entries = {
        h: {r.entry_point for r in prod if r.input_hash == h} for h, _ in hashes.most_common(5)
    }
    assert all(len(e) >= 2 for e in entries.values())
    # delayed labels for about half of production, hours after the trace
    labels = [(r, r.label) for r in prod if r.label is not None]
    assert 0.4 < len(labels) / len(prod) < 0.6
    delays_h = [(lab.created_at - r.ended_at) / 3600 for r, lab in labels]
    assert 0.8 < float(np.median(delays_h)) < 3.0
    # calibrated confidence: accuracy of labeled traffic close to its mean confidence
    acc = np.mean([lab.value for _, lab in labels])
    conf = np.mean([r.confidence for r, _ in labels])
    assert abs(acc - conf) < 0.15
    # proxies on production, true scores everywhere
    assert all(r.score("task_completion_proxy") for r in prod)
    assert all(r.score("factuality") for r in records)
    # counterfactual pairs: same input, baseline version, shadow source
    pairs = {r.trace_id: r for r in records}
    paired = [(r, pairs[r.counterfactual_of]) for r in records if r.counterfactual_of]
    assert len(paired) > 10
    for cur, base in paired:
        assert base.source == "shadow" and cur.input_hash == base.input_hash
        assert cur.agent == base.agent
    # embeddings attached to every trace
    assert all(r.input_embedding is not None and r.output_embedding is not None for r in records)


def test_records_keep_step_order_and_epoch_times(clean: list[dict]) -> None:
    records = events_to_records(list(reversed(clean)))
    r = records[0]
    assert [s.index for s in r.steps] == list(range(len(r.steps)))
    assert r.steps[0].kind == "plan" and r.steps[-1].name == "final_answer"
    assert r.started_at == pytest.approx(START.timestamp(), abs=3600)
    assert all(a.ended_at <= b.started_at for a, b in zip(r.steps, r.steps[1:], strict=False))
    assert [x.started_at for x in records] == sorted(x.started_at for x in records)


def test_embedding_stream_and_base64_vectors(clean: list[dict]) -> None:
    vecs, times = embedding_stream(clean, IMAGE_STREAM)
    assert vecs.dtype == np.float32 and vecs.shape[1] == 16 and len(vecs) == len(times)
    assert np.all(np.diff(times) >= 0)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    ev = next(e for e in clean if e["type"] == "embedding" and e["body"].get("trace_id"))
    raw = np.asarray(ev["body"]["vector"], dtype="<f4").tobytes()
    b64 = {**ev, "body": {**ev["body"], "vector": None, "vector_b64": base64.b64encode(raw).decode(),
                          "dtype": "float32"}}  # fmt: skip
    traces = [
        e for e in clean if e["type"] == "trace" and e["body"]["trace_id"] == ev["body"]["trace_id"]
    ]
    rec = events_to_records([*traces, b64])[0]
    emb = rec.input_embedding if ev["body"]["stream"].endswith("input") else rec.output_embedding
    np.testing.assert_array_equal(emb, np.asarray(ev["body"]["vector"], dtype=np.float32))


def test_emit_between_is_an_exact_slice(clean: list[dict]) -> None:
    part = workload(emit_between=(AT, START + timedelta(hours=5)))
    full = {e["id"]: e for e in clean}
    assert part and all(full[e["id"]] == e for e in part)
    starts = [e["body"]["started_at"] for e in part if e["type"] == "trace"]
    assert min(starts) >= AT.isoformat().replace("+00:00", "")


def test_as_of_hides_late_labels(clean: list[dict]) -> None:
    records = events_to_records(clean)
    now = START.timestamp() + 3 * 3600
    seen = as_of(window(records, START.timestamp(), now), now)
    assert all(s.created_at <= now for r in seen for s in r.scores)
    assert all(r.ended_at <= now for r in seen)


@pytest.mark.parametrize("mode", sorted(FAILURE_MODES))
def test_injection_leaves_everything_before_it_alone(clean: list[dict], mode: str) -> None:
    injected = by_id(strong(mode))
    base = by_id(clean)
    assert injected.keys() <= base.keys()  # FM-4 withholds labels, nothing is added
    before = AT.timestamp()
    changed = [k for k in base if base[k] != injected.get(k)]
    assert changed, f"{mode} changed nothing"
    times = {e["body"].get("trace_id"): e["body"]["started_at"] for e in base.values()
             if e["type"] == "trace"}  # fmt: skip
    for k in changed:
        body = base[k]["body"]
        stamp = times.get(body.get("trace_id")) or body.get("created_at")
        assert datetime.fromisoformat(stamp).timestamp() >= before - 120, (mode, k)


def _changed_fields(mode: str, clean: list[dict]) -> set[tuple[str, str]]:
    injected = by_id(strong(mode))
    out = set()
    for k, ev in by_id(clean).items():
        other = injected.get(k, {"body": {}})
        for field, value in ev["body"].items():
            if other["body"].get(field) != value:
                out.add((ev["type"], field))
    return out


@pytest.mark.parametrize(
    ("mode", "allowed"),
    [
        # a failed call is often retried, so FM-2's failures change which tool comes
        # next and when the trace's later steps, scores and embeddings happen
        ("FM-2", {("span", "status"), ("span", "error_type"), ("span", "confidence"),
                  ("span", "attributes"), ("trace", "status"), ("trace", "attributes"),
                  ("score", "value"), ("embedding", "vector"), ("span", "name"),
                  ("span", "tool_name"), ("span", "started_at"), ("span", "ended_at"),
                  ("trace", "ended_at"), ("score", "created_at"),
                  ("embedding", "created_at")}),
        ("FM-3", {("trace", "attributes"), ("embedding", "vector")}),
        ("FM-6", {("embedding", "vector")}),
    ],
)  # fmt: skip
def test_injection_touches_only_its_mechanism(
    clean: list[dict], mode: str, allowed: set[tuple[str, str]]
) -> None:
    assert _changed_fields(mode, clean) <= allowed


def test_fm6_drifts_only_the_image_stream(clean: list[dict]) -> None:
    injected = strong("FM-6")
    others = [strip_id(e) for e in injected if e["body"].get("stream") != IMAGE_STREAM]
    assert others == [strip_id(e) for e in clean if e["body"].get("stream") != IMAGE_STREAM]
    before, _ = embedding_stream(clean, IMAGE_STREAM)
    after, times = embedding_stream(injected, IMAGE_STREAM)
    late = times >= AT.timestamp()
    np.testing.assert_array_equal(before[~late], after[~late])
    shift = np.linalg.norm(after[late].mean(axis=0) - before[late].mean(axis=0))
    assert shift > 0.1


def _rate(records: list, pred: Any, lo: float, hi: float) -> float:
    sel = [r for r in records if lo <= r.started_at < hi]
    return float(np.mean([pred(r) for r in sel]))


def test_injected_effects_move_the_right_statistics(clean: list[dict]) -> None:
    t0, t1, t2 = START.timestamp(), AT.timestamp(), START.timestamp() + 5 * 3600
    base = events_to_records(clean)

    def prod(rs: list) -> list:
        return [r for r in rs if r.source == "production"]

    fm4 = prod(events_to_records(strong("FM-4")))
    assert _rate(fm4, lambda r: r.label is not None, t1, t2) < 0.1
    assert _rate(prod(base), lambda r: r.label is not None, t1, t2) > 0.4

    fm2 = events_to_records(strong("FM-2"))

    def degraded(r: Any) -> bool:
        return any(s.attributes.get("partial") or s.attributes.get("stale") for s in r.steps)

    assert _rate(fm2, degraded, t1, t2) > _rate(fm2, degraded, t0, t1) + 0.2

    fm7 = prod(events_to_records(strong("FM-7")))

    def proxy(r: Any) -> float:
        return r.score("engagement").value

    assert _rate(fm7, proxy, t1, t2) > _rate(prod(base), proxy, t1, t2) + 0.1

    def fact(r: Any) -> float:
        return r.score("factuality").value

    assert _rate(fm7, fact, t1, t2) < _rate(prod(base), fact, t1, t2) - 0.1

    fm5 = events_to_records(strong("FM-5"))
    late = [r for r in fm5 if r.started_at >= t1 and r.agent == "support-agent"]
    late = [r for r in late if r.source != "shadow"]  # replays run the baseline version
    assert {r.agent_version for r in late} == {"1.5.0"}


def test_invalid_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="mode"):
        Injection("FM-9", AT)
    with pytest.raises(ValueError, match="strength"):
        Injection("FM-1", AT, "huge")
    with pytest.raises(ValueError, match="timezone"):
        Injection("FM-1", AT.replace(tzinfo=None))
    with pytest.raises(ValueError, match="overrides"):
        Injection("FM-4", AT, overrides=(("nope", 1.0),))
    with pytest.raises(ValueError, match="traces_per_hour"):
        generate_workload(0, START, timedelta(hours=1), traces_per_hour=0)
    with pytest.raises(ValueError, match="start"):
        generate_workload(0, START.replace(tzinfo=None), timedelta(hours=1))
