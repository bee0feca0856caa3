"""FM-4 GroundTruthAbsenceDetector: calibration, power, coverage evidence, degenerate input."""

from __future__ import annotations

import numpy as np
import pytest

from detectors.ground_truth import GroundTruthAbsenceDetector, label_coverage
from detectors.records import Score, TraceRecord

DAY = 86_400.0


def window(
    rng: np.random.Generator,
    *,
    start: float,
    n: int,
    accuracy: float,
    coverage: float,
    delay_s: float = 3_600.0,
    version: str = "v1",
    task_types: tuple[str, ...] = ("refund",),
    source: str = "production",
) -> list[TraceRecord]:
    """Traces one minute apart whose confidence is calibrated: P(correct | c) = c.

    Confidence ~ Beta with mean ``accuracy`` (so the realised accuracy is ``accuracy``);
    a ``coverage`` share of traces gets a delayed label ``delay_s`` after the trace ends.
    """
    conc = 12.0
    conf = rng.beta(accuracy * conc, (1 - accuracy) * conc, n)
    correct = rng.random(n) < conf
    labeled = rng.random(n) < coverage
    out = []
    for i in range(n):
        end = start + 60.0 * i
        scores = ()
        if labeled[i]:
            scores = (Score("resolved", float(correct[i]), "true", "delayed", end + delay_s),)
        out.append(
            TraceRecord(
                trace_id=f"{source}-{start:.0f}-{i}",
                agent="support",
                agent_version=version,
                started_at=end - 30.0,
                ended_at=end,
                source=source,
                attributes={"confidence": float(conf[i]), "task_type": task_types[i % 2 - 1]},
                scores=scores,
            )
        )
    return out


def scenario(seed: int, *, drop: float) -> tuple[list[TraceRecord], list[TraceRecord]]:
    rng = np.random.default_rng(seed)
    # 0.5 -> 0.3 coverage stays above the coverage-fall gate (a fall to half or less).
    reference = window(rng, start=0.0, n=1000, accuracy=0.85, coverage=0.5)
    current = window(rng, start=2 * DAY, n=500, accuracy=0.85 - drop, coverage=0.3, delay_s=60.0)
    return reference, current


FAST = GroundTruthAbsenceDetector(n_bootstrap=400)  # (n + 1) * alpha >= 4 over three sub-tests


def test_quiet_on_stationary_windows() -> None:
    fires = sum(FAST.test(*scenario(seed, drop=0.0)).fired for seed in range(50))
    assert fires <= 2  # here 0 / 50; 0 / 200 other seeds


def test_fires_on_moderate_accuracy_drop() -> None:
    results = [FAST.test(*scenario(100 + seed, drop=0.15)) for seed in range(20)]
    assert sum(r.fired for r in results) >= 18  # here 20 / 20; 98 % of 100 other seeds
    r = results[0]
    assert r.failure_mode == "FM-4" and r.status == "ok"
    assert r.statistic > 0.05 and r.p_value is not None and r.p_value <= 0.01
    lo, hi = r.evidence["estimated_accuracy_interval"]
    assert lo <= r.evidence["estimated_accuracy"] <= hi
    assert hi < r.evidence["reference_accuracy"] - 0.05
    assert "drop" in r.evidence["summary"]


def test_estimate_tracks_true_accuracy_without_labels() -> None:
    rng = np.random.default_rng(7)
    reference = window(rng, start=0.0, n=600, accuracy=0.85, coverage=1.0)
    current = window(rng, start=2 * DAY, n=600, accuracy=0.7, coverage=0.0)
    r = GroundTruthAbsenceDetector(n_bootstrap=200).test(reference, current)
    assert r.evidence["estimated_accuracy"] == pytest.approx(0.7, abs=0.04)
    assert r.evidence["realised_accuracy_labeled_current"] is None
    assert r.fired


def test_low_but_steady_coverage_requests_labels_without_firing() -> None:
    rng = np.random.default_rng(3)
    reference = window(rng, start=0.0, n=1000, accuracy=0.85, coverage=0.08)
    current = window(rng, start=2 * DAY, n=300, accuracy=0.85, coverage=0.08)
    r = FAST.test(reference, current)
    assert r.status == "ok" and not r.fired
    assert r.evidence["needs_labels"] is True
    assert r.evidence["cohorts_needing_labels"]
    assert r.evidence["label_coverage"] < 0.2
    assert not r.evidence["sub_tests"]["label_coverage_fall"]["fired"]


def test_labels_that_stop_arriving_fire_on_their_own() -> None:
    rng = np.random.default_rng(3)
    reference = window(rng, start=0.0, n=400, accuracy=0.85, coverage=0.8)
    current = window(rng, start=2 * DAY, n=300, accuracy=0.85, coverage=0.05)
    r = FAST.test(reference, current)
    assert r.fired and r.evidence["sub_tests"]["label_coverage_fall"]["fired"]
    assert not r.evidence["sub_tests"]["estimated_accuracy"]["fired"]
    cov = r.evidence["coverage_at_age"]
    assert cov["reference"] > 0.7 and cov["current"] < 0.1
    assert "labels stopped arriving" in r.evidence["summary"]


def test_coverage_is_compared_at_the_same_label_age() -> None:
    """Labels 6 h late: the newest 6 h of the current window wait for theirs, not a fall."""
    rng = np.random.default_rng(4)
    late = 6 * 3_600.0
    reference = window(rng, start=0.0, n=600, accuracy=0.85, coverage=0.6, delay_s=late)
    current = window(rng, start=2 * DAY, n=600, accuracy=0.85, coverage=0.6, delay_s=late)
    r = FAST.test(reference, current, now=2 * DAY + 600 * 60.0)
    assert r.evidence["label_coverage"] < 0.4  # what is visible now
    assert r.evidence["coverage_at_age"]["current"] == pytest.approx(0.6, abs=0.08)
    assert not r.fired


def test_good_coverage_needs_no_labels() -> None:
    r = FAST.test(*scenario(5, drop=0.0))
    assert r.evidence["needs_labels"] is False
    assert r.evidence["cohorts_needing_labels"] == []


def test_only_the_starved_cohort_is_listed() -> None:
    rng = np.random.default_rng(11)
    reference = window(rng, start=0.0, n=400, accuracy=0.85, coverage=0.8)
    current = window(rng, start=2 * DAY, n=200, accuracy=0.85, coverage=0.9, delay_s=1.0)
    current += window(rng, start=3 * DAY, n=50, accuracy=0.85, coverage=0.0, version="v2")
    r = FAST.test(reference, current)
    assert r.evidence["needs_labels"] is True
    assert [c["agent_version"] for c in r.evidence["cohorts_needing_labels"]] == ["v2"]


def test_labels_arriving_after_now_are_not_visible() -> None:
    rng = np.random.default_rng(2)
    reference = window(rng, start=0.0, n=200, accuracy=0.85, coverage=1.0)
    # every current label arrives a day after its trace: none is visible at the default now
    current = window(rng, start=2 * DAY, n=100, accuracy=0.85, coverage=1.0, delay_s=DAY)
    r = FAST.test(reference, current)
    assert r.evidence["label_coverage"] == 0.0 and r.evidence["needs_labels"] is True
    later = FAST.test(reference, current, now=4 * DAY)
    assert later.evidence["label_coverage"] == 1.0 and later.evidence["needs_labels"] is False


def test_label_coverage_and_delay_per_cohort() -> None:
    def trace(i: int, task: str, delay: float | None) -> TraceRecord:
        scores = () if delay is None else (Score("ok", 1.0, "true", "human", 100.0 + delay),)
        return TraceRecord(
            f"t{i}", "a", "v1", 90.0, 100.0, attributes={"task_type": task}, scores=scores
        )

    traces = [trace(0, "x", 10.0), trace(1, "x", 30.0), trace(2, "x", None), trace(3, "y", None)]
    rows = {r["task_type"]: r for r in label_coverage(traces, now=200.0)}
    assert rows["x"]["n_traces"] == 3 and rows["x"]["n_labeled"] == 2
    assert rows["x"]["coverage"] == pytest.approx(2 / 3)
    assert rows["x"]["label_delay_median_s"] == pytest.approx(20.0)
    assert rows["x"]["label_delay_p90_s"] == pytest.approx(28.0)
    assert rows["x"]["pending_age_median_s"] == pytest.approx(100.0)
    assert rows["y"]["coverage"] == 0.0 and rows["y"]["label_delay_median_s"] is None


def test_online_true_scores_and_eval_traces_are_not_labels() -> None:
    rng = np.random.default_rng(4)
    reference = window(rng, start=0.0, n=300, accuracy=0.85, coverage=0.8)
    online = [
        TraceRecord(
            f"o{i}",
            "support",
            "v1",
            0.0,
            2 * DAY + i,
            attributes={"confidence": 0.9},
            scores=(Score("resolved", 1.0, "true", "online"),),
        )
        for i in range(30)
    ]
    evals = window(rng, start=2 * DAY, n=100, accuracy=0.85, coverage=1.0, source="eval")
    r = FAST.test(reference, online + evals)
    assert r.evidence["label_coverage"] == 0.0
    assert sum(c["n_traces"] for c in r.evidence["cohorts"]) == 30


@pytest.mark.parametrize(
    "case",
    [
        "empty",
        "one_trace",
        "all_labels_missing",
        "no_confidences",
        "nan_confidences",
        "constant_labels",
        "eval_only",
    ],
)
def test_degenerate_input_is_insufficient(case: str) -> None:
    rng = np.random.default_rng(9)
    # The same coverage in both windows, so only the accuracy estimate is at stake.
    reference = window(rng, start=0.0, n=200, accuracy=0.85, coverage=0.5)
    current = window(rng, start=2 * DAY, n=100, accuracy=0.6, coverage=0.5)
    if case == "empty":
        reference, current = [], []
    elif case == "one_trace":
        reference, current = reference[:1], current[:1]
    elif case == "all_labels_missing":
        reference = [
            TraceRecord(
                t.trace_id,
                t.agent,
                t.agent_version,
                t.started_at,
                t.ended_at,
                attributes=t.attributes,
            )
            for t in reference
        ]
    elif case == "no_confidences":
        reference = [
            TraceRecord(
                t.trace_id, t.agent, t.agent_version, t.started_at, t.ended_at, scores=t.scores
            )
            for t in reference
        ]
        current = [
            TraceRecord(
                t.trace_id, t.agent, t.agent_version, t.started_at, t.ended_at, scores=t.scores
            )
            for t in current
        ]
    elif case == "constant_labels":
        reference = [
            TraceRecord(
                t.trace_id,
                t.agent,
                t.agent_version,
                t.started_at,
                t.ended_at,
                attributes=t.attributes,
                scores=tuple(Score(s.name, 1.0, s.kind, s.source, s.created_at) for s in t.scores),
            )
            for t in reference
        ]
        current = [
            TraceRecord(
                t.trace_id,
                t.agent,
                t.agent_version,
                t.started_at,
                t.ended_at,
                attributes=t.attributes,
                scores=tuple(Score(s.name, 1.0, s.kind, s.source, s.created_at) for s in t.scores),
            )
            for t in current
        ]
    elif case == "nan_confidences":
        nan = {"confidence": float("nan")}
        reference = [
            TraceRecord(
                t.trace_id,
                t.agent,
                t.agent_version,
                t.started_at,
                t.ended_at,
                attributes=nan,
                scores=t.scores,
            )
            for t in reference
        ]
        current = [
            TraceRecord(
                t.trace_id,
                t.agent,
                t.agent_version,
                t.started_at,
                t.ended_at,
                attributes=nan,
                scores=t.scores,
            )
            for t in current
        ]
    elif case == "eval_only":
        current = window(rng, start=2 * DAY, n=100, accuracy=0.6, coverage=0.2, source="eval")
    r = FAST.test(reference, current)
    # No accuracy estimate can run; the coverage sub-test still may (labels arrive alike).
    assert not r.fired and "estimated_accuracy" not in r.evidence.get("sub_tests", {})
    assert r.status == "insufficient_data" or r.evidence["sub_tests"]["label_coverage_fall"]
    assert isinstance(r.evidence["needs_labels"], bool)
    assert isinstance(r.evidence["cohorts_needing_labels"], list)


def test_all_labels_missing_everywhere_requests_labels() -> None:
    rng = np.random.default_rng(1)
    reference = window(rng, start=0.0, n=200, accuracy=0.85, coverage=0.0)
    current = window(rng, start=2 * DAY, n=100, accuracy=0.85, coverage=0.0)
    r = FAST.test(reference, current)
    assert r.status == "insufficient_data" and not r.fired
    assert r.evidence["needs_labels"] is True
    assert r.evidence["cohorts_needing_labels"][0]["coverage"] == 0.0


def test_seeded_results_are_reproducible() -> None:
    ref, cur = scenario(21, drop=0.05)
    a, b = FAST.test(ref, cur), FAST.test(ref, cur)
    assert a.p_value == b.p_value and a.evidence == b.evidence


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("alpha", 0.0),
        ("alpha", 1.5),
        ("min_drop", -0.1),
        ("min_coverage", 2.0),
        ("min_labeled", 1),
        ("min_current", 0),
        ("n_bootstrap", 10),
        ("min_cohort_size", 2.5),
    ],
)
def test_invalid_parameters_name_the_parameter(param: str, value: float) -> None:
    with pytest.raises(ValueError, match=param):
        GroundTruthAbsenceDetector(**{param: value})


def test_bootstrap_kernel_matches_sklearn_isotonic_regression() -> None:
    from sklearn.isotonic import isotonic_regression

    from detectors.ground_truth.calibration import pava

    rng = np.random.default_rng(0)
    y, w = rng.random(500), rng.integers(1, 4, 500).astype(float)
    np.testing.assert_allclose(pava(y, w), isotonic_regression(y, sample_weight=w))


def agent_window(
    rng: np.random.Generator, *, start: float, n: int, success: float, coverage: float
) -> list[TraceRecord]:
    """Tool-calling traces with no confidence: a failed task shows more failed tool calls
    (often retried) and longer trajectories, as in tau-bench's real trials."""
    from detectors.records import Step

    out = []
    for i in range(n):
        ok = bool(rng.random() < success)
        n_tools = int(rng.integers(2, 6)) + (0 if ok else int(rng.integers(0, 3)))
        p_fail = 0.05 if ok else 0.25
        steps, k = [], 0
        for _ in range(n_tools):
            steps.append(Step(k, "llm", "chat"))
            failed = bool(rng.random() < p_fail)
            steps.append(Step(k + 1, "tool", "call", "error" if failed else "ok", tool_name="db"))
            k += 2
        steps.append(Step(k, "llm", "chat"))
        end = start + 60.0 * i
        scores = ()
        if rng.random() < coverage:
            delay = float(rng.uniform(1_800, 10_800))
            scores = (Score("task_success", float(ok), "true", "delayed", end + delay),)
        out.append(
            TraceRecord(f"a-{start:.0f}-{i}", "agent", "v1", end - 30.0, end,
                        steps=tuple(steps), scores=scores)
        )  # fmt: skip
    return out


def test_without_confidences_the_trace_features_estimate_success() -> None:
    fired = []
    for seed in range(10):
        rng = np.random.default_rng(500 + seed)
        reference = agent_window(rng, start=0.0, n=640, success=0.45, coverage=0.25)
        current = agent_window(rng, start=2 * DAY, n=640, success=0.2, coverage=0.25)
        r = FAST.test(reference, current, now=2 * DAY + 640 * 60.0)
        assert r.evidence["estimator"] == "trace_features"
        assert set(r.evidence["outcome_model_weights"]) >= {"failed_tool_calls", "log_steps"}
        assert r.evidence["estimated_accuracy"] < r.evidence["reference_accuracy"] - 0.1
        fired.append(r.evidence["sub_tests"]["estimated_accuracy"]["fired"])
    assert sum(fired) >= 8
    assert "estimated from trace features" in r.evidence["summary"]


def test_without_confidences_stationary_agents_stay_quiet() -> None:
    fires = 0
    for seed in range(30):
        rng = np.random.default_rng(900 + seed)
        reference = agent_window(rng, start=0.0, n=640, success=0.45, coverage=0.25)
        current = agent_window(rng, start=2 * DAY, n=640, success=0.45, coverage=0.25)
        fires += FAST.test(reference, current, now=2 * DAY + 640 * 60.0).fired
    assert fires <= 1


def test_labels_that_stop_late_in_the_window_fire_on_the_recent_half() -> None:
    """8 h window, labels stop after 5 h: on the whole window coverage falls 0.8 -> ~0.5,
    short of the gate (a fall to half); on its recent half to ~0.2."""
    rng = np.random.default_rng(7)
    reference = window(rng, start=0.0, n=1440, accuracy=0.85, coverage=0.8, delay_s=600.0)
    before = window(rng, start=2 * DAY, n=300, accuracy=0.85, coverage=0.8, delay_s=600.0)
    after = window(rng, start=2 * DAY + 300 * 60.0, n=180, accuracy=0.85, coverage=0.0)
    r = FAST.test(reference, before + after, now=2 * DAY + 480 * 60.0)
    subs = r.evidence["sub_tests"]
    assert not subs["label_coverage_fall"]["fired"]  # diluted by the window's older half
    assert subs["label_coverage_fall_recent"]["fired"] and r.fired
    assert r.evidence["coverage_at_age"]["current"] < 0.3
    assert "labels stopped arriving" in r.evidence["summary"]
