"""FM-1 detector: calibration on clean data, power on injected compounding, degenerate input."""

from __future__ import annotations

import math
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from detectors.compounding_errors import CompoundingErrorDetector
from detectors.records import Step, TraceRecord, step_error
from detectors.significance import holm
from detectors.window_permutation import window_permutation_test


def make_window(
    rng: np.random.Generator,
    n_traces: int = 150,
    n_steps: int = 8,
    *,
    boost: float = 1.0,
    frailty: bool = True,
    confidence_after_doubt: float = 0.6,
    prefix: str = "t",
) -> list[TraceRecord]:
    """Traces of llm steps with a tool call every third step.

    Clean: each trace has its own error rate (Beta frailty: errors correlate within a
    trace, but nothing compounds). ``boost`` multiplies a decision step's error rate once
    an earlier decision step was wrong. Confidence drops below 0.5 at the first error;
    later steps report ``confidence_after_doubt`` on average.
    """
    base = rng.beta(2, 30, n_traces) if frailty else np.full(n_traces, 0.06)
    draws = rng.random((n_traces, n_steps))
    noise = rng.normal(0, 0.1, (n_traces, n_steps))
    tool_ok = rng.random((n_traces, n_steps)) > 0.1
    traces = []
    for i in range(n_traces):
        steps, wrong, doubted = [], False, False
        for d in range(n_steps):
            if d % 3 == 2:
                ok = bool(tool_ok[i, d])
                steps.append(Step(d, "tool", "search", "ok" if ok else "error", tool_name="search"))
                continue
            err = bool(draws[i, d] < min(1.0, base[i] * (boost if wrong else 1.0)))
            conf = (
                0.3
                if err and not doubted
                else (confidence_after_doubt if doubted else 0.85) + noise[i, d]
            )
            attrs = {"correct": False} if err else {}
            steps.append(Step(d, "llm", "decide", confidence=float(conf), attributes=attrs))
            doubted = doubted or err
            wrong = wrong or err
        traces.append(TraceRecord(f"{prefix}{i}", "agent", steps=tuple(steps)))
    return traces


def fire_rate(
    trials: int, seed: int, n_traces: int = 150, n_reference: int = 150, **current_kwargs: Any
) -> float:
    detector = CompoundingErrorDetector(n_permutations=399)
    fires = 0
    for k in range(trials):
        rng = np.random.default_rng([seed, k])
        reference = make_window(rng, n_reference, prefix="r")
        current = make_window(rng, n_traces, **current_kwargs)
        fires += detector.test(reference, current).fired
    return fires / trials


def test_quiet_on_clean_data_with_correlated_errors() -> None:
    # Frailty makes errors correlate inside a trace in both windows: the reference
    # comparison must absorb it.
    assert fire_rate(50, seed=1) <= 2 / 50


def test_fires_on_moderate_compounding() -> None:
    # 300 current / 600 reference traces x 8 steps, ~6% base error rate with frailty,
    # decision hazard x4 after the first wrong decision. The independent 10% tool failures
    # count as earlier errors and as units too, which dilutes this generator's effect:
    # x3 is caught in 35 of 40 seeds, x4 in 40 of 40.
    assert fire_rate(20, seed=2, n_traces=300, n_reference=600, boost=4.0) >= 0.9


def tool_agent_window(rng: np.random.Generator, n: int, boost: float) -> list[TraceRecord]:
    """Real agents' shape: tool calls with an ok model reply between them. Each trace has
    its own tool failure rate (frailty); after a failed call, the calls *beyond the next
    one* fail ``boost`` times as often (the next one is FM-2's and stays at the base)."""
    traces = []
    for i in range(n):
        base = float(rng.beta(2, 18))
        steps, k, first_failure = [], 0, None
        for call in range(int(rng.integers(4, 9))):
            later = first_failure is not None and call >= first_failure + 2
            failed = bool(rng.random() < min(1.0, base * (boost if later else 1.0)))
            if failed and first_failure is None:
                first_failure = call
            steps.append(Step(k, "tool", "call", "error" if failed else "ok", tool_name="api"))
            steps.append(Step(k + 1, "llm", "reply"))
            k += 2
        traces.append(TraceRecord(f"a{i}", "agent", steps=tuple(steps)))
    return traces


def test_failed_tool_calls_are_early_errors_and_later_failures() -> None:
    detector = CompoundingErrorDetector(n_permutations=399)
    fired = quiet = 0
    for k in range(10):
        rng = np.random.default_rng([21, k])
        reference = tool_agent_window(rng, 400, boost=1.0)
        loud = detector.test(reference, tool_agent_window(rng, 400, boost=3.0))
        fired += loud.fired
        quiet += detector.test(reference, tool_agent_window(rng, 400, boost=1.0)).fired
    assert fired >= 9 and quiet == 0
    assert loud.evidence["tool_steps_after_error"] > 100
    assert loud.evidence["sub_tests"]["tool_compounding"]["fired"]


def test_fires_on_coherence_illusion() -> None:
    assert fire_rate(20, seed=3, confidence_after_doubt=0.8) >= 0.9


def test_evidence_names_depth_ratio_and_examples() -> None:
    rng = np.random.default_rng(4)
    result = CompoundingErrorDetector().test(
        make_window(rng, 300, prefix="r"), make_window(rng, 300, boost=4.0)
    )
    assert result.fired and result.status == "ok"
    ev = result.evidence
    assert ev["sub_tests"]["compounding"]["fired"]
    assert result.statistic == ev["compounding_ratio"] > 2 * float(ev["reference_ratio"])
    assert isinstance(ev["compounding_begins_at_depth"], int)
    assert ev["example_trace_ids"] and all(t.startswith("t") for t in ev["example_trace_ids"])
    assert result.p_value is not None and 0.0 < result.p_value <= 0.01


def test_without_reference_waits_for_one_by_default() -> None:
    """Errors clustered by task (frailty) are every real agent's healthy state: without the
    agent's own history to compare with, the detector says so instead of firing."""
    fired = 0
    for seed in range(10):
        window = make_window(np.random.default_rng(seed), 300, frailty=True)
        result = CompoundingErrorDetector().test([], window)
        assert result.status == "insufficient_data"
        assert result.evidence["reason"].startswith("no reference yet")
        assert result.evidence["compounding_ratio"] > 0  # the ratio is still shown
        fired += CompoundingErrorDetector(without_reference=True).test([], window).fired
    assert fired >= 1  # the independence test would have paged on healthy traffic


def test_without_reference_uses_independent_error_model() -> None:
    rng = np.random.default_rng(5)
    detector = CompoundingErrorDetector(without_reference=True)
    quiet = detector.test([], make_window(rng, 300, frailty=False))
    assert quiet.status == "ok" and not quiet.fired
    assert quiet.evidence["reference_used"] is False
    loud = detector.test([], make_window(rng, 300, frailty=False, boost=4.0))
    assert loud.fired and loud.threshold == detector.min_ratio


def test_errors_right_after_a_failed_tool_belong_to_fm2() -> None:
    # Every tool failure is followed by a failing decision: a cascade, not compounding.
    def trace(i: int) -> TraceRecord:
        fail = i % 4 == 0
        steps = (
            Step(0, "llm", "plan"),
            Step(1, "tool", "call", "error" if fail else "ok", tool_name="api"),
            Step(2, "llm", "use", "error" if fail else "ok"),
            Step(3, "llm", "answer"),
        )
        return TraceRecord(f"t{i}", "a", steps=steps)

    result = CompoundingErrorDetector(min_exposed=1).test([], [trace(i) for i in range(100)])
    assert result.evidence["steps_after_error"] == 0
    assert not result.fired


@pytest.mark.parametrize(
    ("reference", "current"),
    [
        ([], []),
        ([], [TraceRecord("one", "a", steps=(Step(0, "llm", "x"), Step(1, "llm", "y")))]),
        ([], [TraceRecord(f"t{i}", "a", steps=(Step(0, "llm", "x"),)) for i in range(100)]),
        ([], [TraceRecord(f"t{i}", "a") for i in range(100)]),
    ],
    ids=["empty", "one-trace", "single-step", "no-steps"],
)
def test_degenerate_input_is_insufficient(
    reference: list[TraceRecord], current: list[TraceRecord]
) -> None:
    result = CompoundingErrorDetector().test(reference, current)
    assert result.status == "insufficient_data" and not result.fired
    assert result.p_value is None and result.evidence["reason"]


def test_error_free_constant_confidence_is_insufficient_not_a_crash() -> None:
    steps = tuple(Step(d, "llm", "x", confidence=0.9) for d in range(5))
    window = [TraceRecord(f"t{i}", "a", steps=steps) for i in range(100)]
    result = CompoundingErrorDetector().test(window, window)
    assert result.status == "insufficient_data" and not result.fired


def test_constant_low_confidence_scores_do_not_crash() -> None:
    steps = (Step(0, "llm", "x", confidence=0.2), Step(1, "llm", "y", confidence=0.9))
    window = [TraceRecord(f"t{i}", "a", steps=steps) for i in range(50)]
    result = CompoundingErrorDetector().test(window, window)
    assert result.status == "ok" and not result.fired
    assert result.evidence["coherence_illusion"] == pytest.approx(0.9)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.5}, "alpha"),
        ({"min_ratio": 0.5}, "min_ratio"),
        ({"low_confidence": 1.0}, "low_confidence"),
        ({"min_confidence_increase": -0.1}, "min_confidence_increase"),
        ({"min_traces": 1}, "min_traces"),
        ({"min_exposed": 0}, "min_exposed"),
        ({"max_depth": 0}, "max_depth"),
        ({"n_permutations": 50}, "n_permutations"),
        ({"sources": ()}, "sources"),
    ],
)
def test_parameters_are_validated(kwargs: dict[str, float], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        CompoundingErrorDetector(**kwargs)  # type: ignore[arg-type]


def test_step_error_definition() -> None:
    assert step_error(Step(0, "llm", "x", status="error"))
    assert step_error(Step(0, "llm", "x", error_type="Timeout"))
    assert step_error(Step(0, "llm", "x", attributes={"correct": False}))
    assert step_error(Step(0, "llm", "x", attributes={"error_type": "bad"}))
    assert not step_error(Step(0, "llm", "x", attributes={"correct": True}))


def test_holm_matches_step_down_definition() -> None:
    assert holm([0.001, 0.2, 0.02]).tolist() == pytest.approx([0.003, 0.2, 0.04])
    assert holm([0.5, 0.9]).tolist() == pytest.approx([1.0, 1.0])


def test_window_permutation_test_is_uniform_under_the_null() -> None:
    rng = np.random.default_rng(6)
    p_values = []
    for k in range(200):
        units = rng.poisson(3.0, (60, 2)).astype(float)
        _, p = window_permutation_test(
            units[:30], units[30:], lambda s: s[..., 0] / np.maximum(s[..., 1], 1),
            n_permutations=199, seed=k,
        )  # fmt: skip
        p_values.append(p)
    p_arr = np.array(p_values)
    assert abs((p_arr <= 0.1).mean() - 0.1) < 0.06
    assert math.isclose(p_arr.min(), p_arr.min())  # finite


def test_only_production_traces_count_by_default() -> None:
    rng = np.random.default_rng(7)
    evals = [
        TraceRecord(t.trace_id, t.agent, source="eval", steps=t.steps)
        for t in make_window(rng, 100)
    ]
    assert CompoundingErrorDetector().test(evals, evals).status == "insufficient_data"
    assert CompoundingErrorDetector(sources=("eval",)).test(evals, evals).status == "ok"


def test_fm1_to_fm3_modules_stay_a_pure_library() -> None:
    code = (
        "import sys, detectors.compounding_errors, detectors.tool_cascades, "
        "detectors.output_drift; "
        "print(sorted(m for m in ('app', 'sqlalchemy', 'fastapi') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
