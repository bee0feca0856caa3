"""FM-2 detector: calibration on clean data, power per sub-test, degenerate input."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from detectors.records import Score, Step, TraceRecord
from detectors.tool_cascades import ToolCascadeDetector, available_but_wrong, trace_quality

TOOLS = ("search", "db", "api")


def make_window(
    rng: np.random.Generator,
    n_traces: int = 200,
    n_steps: int = 8,
    *,
    p_cascade: float = 0.12,
    abw_db: float = 0.05,
    latency_effect: float = 0.0,
    prefix: str = "t",
) -> list[TraceRecord]:
    """Tool calls at even depths, llm steps at odd depths.

    Each trace has its own tool failure rate (Beta frailty). A step right after a failed
    tool fails with ``p_cascade``, any other step with 4%. Ok ``db`` calls come back
    ``partial`` with rate ``abw_db`` (others 5%). Quality falls with mean tool latency by
    ``latency_effect`` per second.
    """
    tool_rate = rng.beta(2, 20, n_traces)
    scale = rng.lognormal(0.0, 0.4, n_traces)
    u_fail, u_next, u_abw = rng.random((3, n_traces, n_steps))
    tool_idx = rng.integers(0, len(TOOLS), (n_traces, n_steps))
    latency = scale[:, None] * rng.lognormal(0.0, 0.3, (n_traces, n_steps))
    noise = rng.normal(0.0, 0.1, n_traces)
    traces = []
    for i in range(n_traces):
        steps, prev_tool_failed, lat = [], False, []
        for d in range(n_steps):
            if d % 2 == 0:
                tool = TOOLS[tool_idx[i, d]]
                failed = bool(u_fail[i, d] < tool_rate[i])
                rate = abw_db if tool == "db" else 0.05
                attrs = {"partial": True} if not failed and u_abw[i, d] < rate else {}
                lat.append(latency[i, d])
                steps.append(
                    Step(d, "tool", f"call_{tool}", "error" if failed else "ok", tool_name=tool,
                         started_at=float(d), ended_at=float(d + latency[i, d]), attributes=attrs)
                )  # fmt: skip
                prev_tool_failed = failed
            else:
                failed = bool(u_next[i, d] < (p_cascade if prev_tool_failed else 0.04))
                steps.append(Step(d, "llm", "reason", "error" if failed else "ok"))
                prev_tool_failed = False
        quality = float(np.clip(0.7 + noise[i] - latency_effect * (np.mean(lat) - 1.0), 0, 1))
        traces.append(
            TraceRecord(f"{prefix}{i}", "agent", steps=tuple(steps),
                        scores=(Score("quality", quality, kind="true"),))
        )  # fmt: skip
    return traces


def fire_rates(
    trials: int, seed: int, n_traces: int = 200, reference_kwargs: Any = None, **kwargs: Any
) -> dict:
    detector = ToolCascadeDetector(n_permutations=399)
    fired, sub = 0, dict[str, int]()
    for k in range(trials):
        rng = np.random.default_rng([seed, k])
        reference = make_window(rng, n_traces, prefix="r", **(reference_kwargs or {}))
        result = detector.test(reference, make_window(rng, n_traces, **kwargs))
        fired += result.fired
        for name, sub_test in result.evidence["sub_tests"].items():
            sub[name] = sub.get(name, 0) + sub_test["fired"]
    return {"any": fired / trials, **{n: v / trials for n, v in sub.items()}}


def test_quiet_on_clean_data() -> None:
    assert fire_rates(50, seed=1)["any"] <= 2 / 50


def test_agent_that_always_cascaded_stays_quiet() -> None:
    rates = fire_rates(20, seed=2, reference_kwargs={"p_cascade": 0.5}, p_cascade=0.5)
    assert rates["any"] <= 1 / 20


def test_fires_on_moderate_cascade() -> None:
    # 400 traces x 4 tool calls per window, ~9% of calls fail; the model step after a
    # failed tool fails 12% -> 45%. What follows a tool call is counted up to the next tool
    # call, whose own failures add noise: 12% -> 35% is caught in 80% of 40 seeds (it was
    # about 95% when only the next step counted), 12% -> 45% in 40 of 40.
    assert fire_rates(20, seed=3, n_traces=400, p_cascade=0.45)["cascade_lift"] >= 0.9


def real_agent_window(rng: np.random.Generator, n_traces: int, p_next: float) -> list:
    """Tool calls with a model reply between them that never fails, as in real agents:
    after a failed call the next *tool call* fails with ``p_next`` (else 8%)."""
    traces = []
    for i in range(n_traces):
        steps, failed, k = [], False, 0
        for _ in range(int(rng.integers(3, 7))):
            failed = bool(rng.random() < (p_next if failed else 0.08))
            steps.append(Step(k, "tool", "call", "error" if failed else "ok", tool_name="api"))
            steps.append(Step(k + 1, "llm", "reply"))
            k += 2
        traces.append(TraceRecord(f"r{i}", "agent", steps=tuple(steps)))
    return traces


def test_fires_when_the_next_tool_call_fails_after_a_model_reply() -> None:
    detector = ToolCascadeDetector(n_permutations=399)
    fired = quiet = 0
    for k in range(10):
        rng = np.random.default_rng([11, k])
        reference = real_agent_window(rng, 300, p_next=0.15)
        fired += detector.test(reference, real_agent_window(rng, 300, p_next=0.45)).fired
        quiet += detector.test(reference, real_agent_window(rng, 300, p_next=0.15)).fired
    assert fired >= 9 and quiet == 0


def test_fires_on_available_but_wrong_tool() -> None:
    # db results silently partial 5% -> 15% of ok calls (about 480 db calls per window).
    assert fire_rates(20, seed=4, n_traces=400, abw_db=0.15)["available_but_wrong"] >= 0.9


def test_fires_when_quality_falls_with_latency() -> None:
    assert fire_rates(20, seed=5, n_traces=120, latency_effect=0.25)["latency_quality"] >= 0.9


def test_evidence_ranks_tools_and_flags_wrong_results() -> None:
    rng = np.random.default_rng(6)
    result = ToolCascadeDetector().test(
        make_window(rng, 300, prefix="r"), make_window(rng, 300, p_cascade=0.5, abw_db=0.25)
    )
    ev = result.evidence
    assert result.fired and result.statistic == ev["cascade_lift"] > result.threshold
    assert {r["tool"] for r in ev["cascade_tools"]} == set(TOOLS)
    assert ev["cascade_tools"][0]["cascades"] >= ev["cascade_tools"][-1]["cascades"]
    assert ev["available_but_wrong"][0]["tool"] == "db"
    assert sum(ev["cascade_depths"].values()) == sum(r["failures"] for r in ev["cascade_tools"])
    assert ev["example_trace_ids"] and ev["example_trace_ids"][0].startswith("t")


def test_cascade_depth_counts_failures_after_the_tool() -> None:
    steps = (
        Step(0, "tool", "fetch", "error", tool_name="fetch"),
        Step(1, "llm", "a", "error"),
        Step(2, "tool", "fetch", "error", tool_name="fetch"),
        Step(3, "llm", "b", attributes={"correct": False}),
        Step(4, "llm", "c"),
        Step(5, "tool", "fetch", "error", tool_name="fetch"),
    )
    window = [TraceRecord(f"t{i}", "a", steps=steps) for i in range(40)]
    ev = ToolCascadeDetector(min_failures=1).test([], window).evidence
    # One cascade: the ok model step (c) does not end it, so the last failed fetch is its
    # fourth failed step.
    assert ev["cascade_depths"] == {"0": 0, "1": 0, "2": 0, "3": 0, "4": 40, "5+": 0}
    assert ev["cascade_tools"] == [
        {"tool": "fetch", "failures": 40, "cascades": 40, "mean_depth": 4.0}
    ]


def test_without_reference_waits_for_one_by_default() -> None:
    rng = np.random.default_rng(7)
    result = ToolCascadeDetector().test([], make_window(rng, 300, p_cascade=0.5))
    assert result.status == "insufficient_data" and not result.fired
    assert result.evidence["reason"].startswith("no reference yet")
    assert result.evidence["cascade_depths"]  # what the window holds is still shown


def test_without_reference_fisher_and_min_lift_decide() -> None:
    rng = np.random.default_rng(7)
    detector = ToolCascadeDetector(without_reference=True)
    loud = detector.test([], make_window(rng, 300, p_cascade=0.5))
    assert loud.fired and not loud.evidence["reference_used"]
    assert loud.threshold == detector.min_lift
    assert set(loud.evidence["sub_tests"]) == {"cascade_lift"}
    quiet = detector.test([], make_window(rng, 300, p_cascade=0.04))
    assert not quiet.fired


@pytest.mark.parametrize(
    "current",
    [
        [],
        [TraceRecord("one", "a", steps=(Step(0, "tool", "x", "error", tool_name="x"),))],
        [TraceRecord(f"t{i}", "a", steps=(Step(0, "llm", "x", "error"),)) for i in range(100)],
        [TraceRecord(f"t{i}", "a", steps=(Step(0, "tool", "x", tool_name="x"),)) for i in range(9)],
    ],
    ids=["empty", "one-trace", "no-tool-calls", "few-calls"],
)
def test_degenerate_input_is_insufficient(current: list[TraceRecord]) -> None:
    result = ToolCascadeDetector().test([], current)
    assert result.status == "insufficient_data" and not result.fired
    assert result.evidence["reason"]


def test_constant_latency_and_quality_skip_the_correlation() -> None:
    steps = (Step(0, "tool", "x", tool_name="x"), Step(1, "llm", "y"))
    window = [TraceRecord(f"t{i}", "a", steps=steps) for i in range(100)]
    result = ToolCascadeDetector().test(window, window)
    assert result.status == "insufficient_data" and not result.fired


def test_available_but_wrong_definition() -> None:
    def tool(status: str = "ok", **attrs: Any) -> Step:
        return Step(0, "tool", "x", status, tool_name="x", attributes=attrs)

    assert available_but_wrong(tool(partial=True))
    assert available_but_wrong(tool(stale="true"))
    assert available_but_wrong(tool(result_count=0))
    assert not available_but_wrong(tool(result_count=3))
    assert not available_but_wrong(tool(result_count=False))
    assert not available_but_wrong(tool("error", partial=True))


def test_trace_quality_prefers_quality_then_true_score_then_success() -> None:
    both = (Score("quality", 0.3), Score("accuracy", 0.9, kind="true"))
    assert trace_quality(TraceRecord("a", "x", scores=both)) == 0.3
    assert trace_quality(TraceRecord("b", "x", scores=both[1:])) == 0.9
    assert trace_quality(TraceRecord("c", "x", status="error")) == 0.0


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"min_lift": 0.9}, "min_lift"),
        ({"min_failures": 0}, "min_failures"),
        ({"min_tool_calls": 0}, "min_tool_calls"),
        ({"min_abw_increase": 1.0}, "min_abw_increase"),
        ({"min_traces": 3}, "min_traces"),
        ({"min_rho_drop": -0.1}, "min_rho_drop"),
        ({"n_permutations": 10}, "n_permutations"),
        ({"sources": []}, "sources"),
    ],
)
def test_parameters_are_validated(kwargs: dict[str, float], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        ToolCascadeDetector(**kwargs)  # type: ignore[arg-type]
