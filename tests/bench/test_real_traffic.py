"""bench/real_traffic.py: the τ-bench data, the scenarios' success rates, the spans it emits,
and (slow) a short live replay in which the outcomes monitor catches the regression."""

from __future__ import annotations

import argparse
import json
from datetime import timedelta

import numpy as np
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from bench.real_traffic import WHO_AND_WHEN, emit, load_trajectories, run, schedule


@pytest.fixture(scope="module")
def trajectories() -> list[dict]:
    return list(load_trajectories()["trajectories"])


def test_the_data_is_tau_bench_gpt4o_airline(trajectories: list[dict]) -> None:
    assert len(trajectories) == 200
    assert len({t["task_id"] for t in trajectories}) == 50
    assert np.mean([t["reward"] for t in trajectories]) == pytest.approx(0.42)
    errors = sum(m.get("error", False) for t in trajectories for m in t["messages"])
    assert errors == 73  # tool results that start with "Error" in the original file


@pytest.mark.parametrize(("scenario", "after"), [("clean", 0.42), ("regression", 0.20)])
def test_scenarios_keep_or_drop_success(
    trajectories: list[dict], scenario: str, after: float
) -> None:
    traces, onset = schedule(
        trajectories, scenario=scenario, clean_hours=30, hours=60, rate=80, seed=1
    )
    before = [t.trajectory["reward"] for t in traces if t.start < onset]
    later = [t.trajectory["reward"] for t in traces if t.start >= onset]
    assert np.mean(before) == pytest.approx(0.42, abs=0.04)
    assert np.mean(later) == pytest.approx(after, abs=0.04)
    assert len(traces) == pytest.approx(90 * 80, rel=0.05)
    gaps = np.diff([t.start.timestamp() for t in traces])
    assert gaps.mean() == pytest.approx(45.0, rel=0.05)  # Poisson at 80/h


def test_who_and_when_is_another_domain_that_fails(trajectories: list[dict]) -> None:
    logs = load_trajectories(WHO_AND_WHEN)["trajectories"]
    assert len(logs) == 126 and all(t["reward"] == 0.0 for t in logs)
    tools = [m for t in logs for m in t["messages"] if m["role"] == "tool"]
    assert {m["name"] for m in tools} == {"python"}
    assert 0.3 < np.mean([m["error"] for m in tools]) < 0.7  # exit codes other than 0
    for t in logs:  # every tool result answers a call the turn before it requested
        for before, m in zip(t["messages"], t["messages"][1:], strict=False):
            if m["role"] == "tool":
                assert before["role"] == "assistant" and before["calls"][0]["name"] == "python"
    questions = {t["messages"][0]["text"] for t in logs}
    airline = {m.get("text") for t in trajectories for m in t["messages"] if m["role"] == "user"}
    assert not questions & airline


def test_domain_shift_mixes_the_other_domain_in_after_the_onset(trajectories: list[dict]) -> None:
    logs = load_trajectories(WHO_AND_WHEN)["trajectories"]
    traces, onset = schedule(
        trajectories, scenario="domain-shift", clean_hours=10, hours=30, rate=80, seed=3,
        shifted=logs,
    )  # fmt: skip
    ids = {id(t) for t in logs}
    before = [id(t.trajectory) in ids for t in traces if t.start < onset]
    after = [id(t.trajectory) in ids for t in traces if t.start >= onset]
    assert not any(before)
    assert np.mean(after) == pytest.approx(0.5, abs=0.04)


def test_a_quarter_labeled(trajectories: list[dict]) -> None:
    traces, _ = schedule(
        trajectories, scenario="regression-25", clean_hours=10, hours=40, rate=80, seed=2
    )
    assert np.mean([t.labeled for t in traces]) == pytest.approx(0.25, abs=0.03)
    delays = [t.label_delay / timedelta(hours=1) for t in traces]
    assert 0.5 <= min(delays) and max(delays) <= 3.0


def test_spans_follow_the_genai_conventions(trajectories: list[dict]) -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with_error = next(t for t in trajectories if any(m.get("error") for m in t["messages"]))
    traces, _ = schedule([with_error], scenario="clean", clean_hours=1, hours=0, rate=80, seed=0)
    ended, trace_id = emit(provider.get_tracer("t"), traces[0], np.random.default_rng(0))
    spans = memory.get_finished_spans()
    assert ended > traces[0].start and len(trace_id) == 32
    ops = [s.attributes["gen_ai.operation.name"] for s in spans]
    assert ops.count("invoke_agent") == 1
    assert ops.count("chat") == sum(m["role"] == "assistant" for m in with_error["messages"])
    assert ops.count("execute_tool") == sum(m["role"] == "tool" for m in with_error["messages"])
    failed = [s for s in spans if s.status.status_code is StatusCode.ERROR]
    assert failed and all(s.attributes["gen_ai.operation.name"] == "execute_tool" for s in failed)
    chat = next(s for s in spans if s.attributes["gen_ai.operation.name"] == "chat")
    assert json.loads(chat.attributes["gen_ai.output.messages"])[0]["role"] == "assistant"
    root = next(s for s in spans if s.parent is None)
    assert all(s.context.trace_id == root.context.trace_id for s in spans)
    assert all(root.start_time <= s.start_time <= s.end_time <= root.end_time for s in spans)


@pytest.mark.slow
def test_a_short_live_replay_pages_on_the_success_fall() -> None:
    args = argparse.Namespace(
        # OUTCOME's first verdict needs 24 h of data (its windows are 8 h long).
        scenario="regression", traffic="tau-bench", clean_hours=25.0, hours=6.0, rate=80.0,
        seed=0, monitors="OUTCOME", first_tick_hours=24.0, text_embeddings=False,
        data=None, verbose=False, recover_after_hours=None, night=1.0, tick_minutes=15.0,
        judge_agreement=None, label_share=None,
    )  # fmt: skip
    from bench.real_traffic import DATA

    args.data = DATA
    report = run(args)
    outcome = report["monitors"]["OUTCOME"]
    assert outcome["false_episodes_before_onset"] == 0
    assert outcome["first_alert_after_onset_h"] is not None
    assert outcome["first_alert_after_onset_h"] <= 6.0, outcome
    assert outcome["alert_summary"].startswith("task_success fell"), outcome
    assert "labels" in outcome["alert_summary"]
