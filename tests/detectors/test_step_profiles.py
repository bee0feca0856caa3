"""Step profiles: a window's count statistics over every trace while the records are a
sample (detectors/step_profiles.py, the weighted permutation test, FM-1 and FM-2)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from detectors.compounding_errors import CompoundingErrorDetector
from detectors.records import Step, TraceRecord
from detectors.step_profiles import ProfileCounts, RecordWindow, profile_steps, step_profile
from detectors.tool_cascades import ToolCascadeDetector
from detectors.tool_cascades.tool_calls import excess_risk
from detectors.window_permutation import window_permutation_test
from tests.detectors import test_compounding_errors as fm1_data
from tests.detectors import test_tool_cascades as fm2_data


def test_profile_writes_tool_and_failure_per_step_in_step_order() -> None:
    steps = [
        Step(2, "llm", "answer", attributes={"correct": "false"}),
        Step(0, "retrieval", "docs"),
        Step(1, "llm", "call", tool_name="search", error_type="Timeout"),
        Step(3, "plan", "replan"),
    ]
    assert step_profile(steps) == "tTSs"
    assert profile_steps("tTSs") == [(True, False), (True, True), (False, True), (False, False)]


def _distinct(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    patterns, counts = np.unique(rows, axis=0, return_counts=True)
    return patterns, counts


@pytest.mark.parametrize("n", [300, 4000])  # expanded below GROUPED_FROM units, grouped above
def test_weighted_windows_give_the_test_of_their_rows_repeated(n: int) -> None:
    rng = np.random.default_rng(5)
    cur = rng.poisson([0.4, 2.0, 0.3, 3.0], size=(n, 4)).astype(float)
    ref = rng.poisson([0.2, 2.0, 0.3, 3.0], size=(n, 4)).astype(float)
    (pc, wc), (pr, wr) = _distinct(cur), _distinct(ref)
    kwargs = {"n_permutations": 499, "seed": 3}
    weighted = window_permutation_test(
        pc, pr, excess_risk, current_weights=wc, reference_weights=wr, **kwargs
    )
    repeated = window_permutation_test(
        np.repeat(pc, wc, axis=0), np.repeat(pr, wr, axis=0), excess_risk, **kwargs
    )
    assert weighted == pytest.approx(repeated, rel=1e-6)
    assert weighted[1] < 0.01  # the shift is there, and found either way


def test_weights_must_be_one_count_per_row() -> None:
    rows = np.ones((3, 4))
    with pytest.raises(ValueError, match="one per row"):
        window_permutation_test(
            rows, rows, excess_risk, n_permutations=99, seed=0, current_weights=np.ones(2)
        )


def _sampled(window: list[TraceRecord], every: int) -> RecordWindow:
    return RecordWindow(window[::every], step_profiles=ProfileCounts.of(window))


def test_fm2_counts_every_trace_of_a_sampled_window() -> None:
    rng = np.random.default_rng(11)
    reference = fm2_data.make_window(rng, 3000, prefix="r")
    current = fm2_data.make_window(rng, 3000, p_cascade=0.2)
    detector = ToolCascadeDetector(n_permutations=999)
    full = detector.test(reference, current).evidence
    sampled = detector.test(_sampled(reference, 10), _sampled(current, 10)).evidence
    # The lift, its tests and the depth histograms are the whole window's, not the sample's:
    # the same numbers as from every record (the grouped permutation draws are the same).
    for key in ("cascade_lift", "reference_lift", "fisher_p_value", "lift_increase_p_value",
                "tool_calls", "cascade_depths", "reference_cascade_depths"):  # fmt: skip
        assert sampled[key] == pytest.approx(full[key]), key
    assert sampled["counted_traces"] == "whole window" and full["counted_traces"] == "records"
    sample_only = detector.test(reference[::10], current[::10]).evidence
    assert sample_only["tool_calls"] == pytest.approx(full["tool_calls"] / 10, rel=0.1)


def test_fm1_counts_every_trace_of_a_sampled_window() -> None:
    rng = np.random.default_rng(12)
    reference = fm1_data.make_window(rng, 2600, prefix="r")
    current = fm1_data.make_window(rng, 2600, boost=2.5)
    detector = CompoundingErrorDetector(n_permutations=999)
    full = detector.test(reference, current)
    sampled = detector.test(_sampled(reference, 8), _sampled(current, 8))
    assert sampled.statistic == pytest.approx(full.statistic)
    for key in ("compounding_ratio", "reference_ratio", "steps_after_error"):
        assert sampled.evidence[key] == pytest.approx(full.evidence[key]), key
    assert sampled.evidence["by_depth"] == full.evidence["by_depth"]
    compounding = "compounding"
    assert sampled.evidence["sub_tests"][compounding]["p_value"] == pytest.approx(
        full.evidence["sub_tests"][compounding]["p_value"]
    )
    assert sampled.fired and full.fired


def test_profile_counts_keep_sources_apart_and_windows_pickle() -> None:
    traces = [
        TraceRecord("a", "bot", steps=(Step(0, "tool", "x", "error"), Step(1, "llm", "y"))),
        TraceRecord("b", "bot", source="eval", steps=(Step(0, "tool", "x", "error"),)),
        TraceRecord("c", "bot", steps=(Step(0, "tool", "x", "error"), Step(1, "llm", "y"))),
    ]
    counts = ProfileCounts.of(traces)
    assert counts.traces == 3
    assert counts.for_sources(["production"]) == [("Ts", 2)]
    assert counts.for_sources(["production", "eval"]) == [("T", 1), ("Ts", 2)]
    window = RecordWindow(traces[:1], step_profiles=counts)
    again = pickle.loads(pickle.dumps(window))
    assert list(again) == traces[:1] and again.step_profiles == counts
