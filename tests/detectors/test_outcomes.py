"""Outcome regressions: calibration on stationary windows, power on real-sized falls."""

from __future__ import annotations

import re

import numpy as np
import pytest

from detectors.outcome_summary import describe
from detectors.outcomes import OutcomeRegressionDetector
from detectors.records import Score, Step, TraceRecord
from detectors.registry import DetectorParameterError, build_detector

TOOLS = ("get_user_details", "get_reservation", "search_flights", "book", "cancel", "think")


def window(
    rng: np.random.Generator,
    n: int,
    *,
    start: float,
    success: float = 0.41,
    labeled: float = 1.0,
    tool_failure: float = 0.08,
    broken_tool: str | None = None,
    latency_scale: float = 1.0,
    error_rate: float = 0.02,
    loop_rate: float | None = None,
) -> list[TraceRecord]:
    """Traces shaped like tau-bench's: a few tool calls between model steps, a delayed label;
    with ``loop_rate``, derived for tool loops, that share of them looping."""
    out = []
    for i in range(n):
        steps = []
        for k in range(int(rng.integers(2, 9))):
            steps.append(Step(2 * k, "llm", "chat"))
            tool = TOOLS[int(rng.integers(len(TOOLS)))]
            p_fail = 0.5 if tool == broken_tool else tool_failure
            status = "error" if rng.random() < p_fail else "ok"
            steps.append(Step(2 * k + 1, "tool", tool, status=status, tool_name=tool))
        t0 = start + i * 45.0
        scores = ()
        if rng.random() < labeled:
            value = float(rng.random() < success)
            scores = (Score("task_success", value, kind="true", source="delayed"),)
        out.append(
            TraceRecord(
                f"t{start:.0f}-{i}",
                "airline-agent",
                started_at=t0,
                ended_at=t0 + float(rng.lognormal(3.0, 0.5)) * latency_scale,
                status="error" if rng.random() < error_rate else "ok",
                steps=tuple(steps),
                scores=scores,
                **_loop(rng, loop_rate),
            )
        )
    return out


def _loop(rng: np.random.Generator, rate: float | None) -> dict[str, object]:
    if rate is None:  # not derived for loops (no draw: the other tests' streams stay)
        return {}
    if rng.random() < rate:
        return {"loop_calls": int(rng.integers(3, 7)), "loop_tool": "get_reservation"}
    return {"loop_calls": int(rng.integers(0, 3)), "loop_tool": None}


@pytest.mark.slow
def test_stationary_windows_fire_at_most_at_alpha() -> None:
    detector = OutcomeRegressionDetector(alpha=0.01)
    fired = 0
    runs = 200
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        reference = window(rng, 320, start=0.0)
        current = window(rng, 160, start=1e6, labeled=0.4)
        result = detector.test(reference, current)
        assert result.status == "ok"
        fired += result.fired
    # Expected 2 of 200 at alpha = 0.01; 6 or more has p < 0.02 under Binomial(200, 0.01).
    assert fired <= 5, fired


@pytest.mark.slow
def test_stationary_windows_with_tool_loops_fire_at_most_at_alpha() -> None:
    detector = OutcomeRegressionDetector(alpha=0.01)
    fired = loop_fired = 0
    for seed in range(200):
        rng = np.random.default_rng(5000 + seed)
        reference = window(rng, 320, start=0.0, loop_rate=0.05)
        current = window(rng, 160, start=1e6, labeled=0.4, loop_rate=0.05)
        result = detector.test(reference, current)
        fired += result.fired
        loop_fired += any(
            r["fired"] for r in result.evidence["operations"] if r["signal"] == "loop_rate"
        )
    assert fired <= 5, fired
    assert loop_fired <= 2, loop_fired


def test_a_rise_of_tool_loops_fires_and_is_worded() -> None:
    rng = np.random.default_rng(21)
    reference = window(rng, 640, start=0.0, loop_rate=0.02)
    current = window(rng, 640, start=1e6, loop_rate=0.14)
    result = OutcomeRegressionDetector(alpha=0.001).test(reference, current)
    assert result.fired
    fired = [r for r in result.evidence["operations"] if r["fired"]]
    assert [r["signal"] for r in fired] == ["loop_rate"]
    assert fired[0]["after"] - fired[0]["before"] > 0.08
    assert "traces had a tool loop" in result.evidence["summary"]
    examples = {t.trace_id: t for t in current}
    assert all(examples[tid].has_loop for tid in result.evidence["example_trace_ids"])
    assert result.evidence["change_started_at"] >= 1e6


def test_traces_not_derived_for_loops_are_left_out_of_the_loop_rate() -> None:
    """Traces stored before loops were derived (no ``loop_calls``) are not loop-free."""
    rng = np.random.default_rng(22)
    reference = window(rng, 640, start=0.0)  # not derived for loops
    current = window(rng, 320, start=1e6, loop_rate=0.1)
    result = OutcomeRegressionDetector(alpha=0.001).test(reference, current)
    assert "loop_rate" not in {r["signal"] for r in result.evidence["operations"]}
    mixed = window(rng, 60, start=0.0, loop_rate=0.1) + reference
    result = OutcomeRegressionDetector(alpha=0.001).test(mixed, current)
    row = next(r for r in result.evidence["operations"] if r["signal"] == "loop_rate")
    assert row["n_reference"] == 60 and not row["fired"]


@pytest.mark.parametrize("labeled", [1.0, 0.25])
def test_a_real_sized_success_fall_fires_and_names_the_objective(labeled: float) -> None:
    detector = OutcomeRegressionDetector(alpha=3.5e-4)  # 30 days between false alerts
    caught = 0
    for seed in range(40):
        rng = np.random.default_rng(1000 + seed)
        reference = window(rng, 320, start=0.0, labeled=labeled)
        current = window(rng, 320, start=1e6, success=0.19, labeled=labeled)
        result = detector.test(reference, current)
        if result.fired:
            caught += 1
            assert result.evidence["summary"].startswith("task_success fell")
            rows = {r["scope"]: r for r in result.evidence["objectives"]}
            assert set(rows) == {"whole window", "recent half"}
            assert all(r["before"] > 0.3 > r["after"] for r in rows.values())
            labels = result.evidence["labels"]["task_success"]
            assert labels["current"] == rows["whole window"]["n_current"]
            assert 0 < rows["recent half"]["n_current"] < labels["current"]
            assert labels["reference"] > 0
            assert result.evidence["example_trace_ids"]
    # One run's power; the monitor's chart then adds runs up (bench/real_traffic.py has the
    # hours to an alert). At 25% labels a run holds ~80 labels a window: ~30% per run.
    assert caught >= (38 if labeled == 1.0 else 6), caught


def test_a_failing_tool_fires_and_is_named() -> None:
    rng = np.random.default_rng(3)
    reference = window(rng, 320, start=0.0)
    current = window(rng, 160, start=1e6, broken_tool="search_flights")
    result = OutcomeRegressionDetector(alpha=0.001).test(reference, current)
    assert result.fired
    fired = [r for r in result.evidence["operations"] if r["fired"]]
    assert [r["name"] for r in fired] == ["search_flights"]
    assert "tool search_flights failed" in result.evidence["summary"]


def test_slower_traces_fire_on_latency_only() -> None:
    rng = np.random.default_rng(4)
    reference = window(rng, 320, start=0.0)
    current = window(rng, 160, start=1e6, latency_scale=1.6)
    result = OutcomeRegressionDetector(alpha=0.001).test(reference, current)
    assert result.fired
    fired = [r for r in result.evidence["operations"] if r["fired"]]
    assert {r["signal"] for r in fired} == {"latency_s"}
    assert {r["scope"] for r in result.evidence["operations"]} == {"recent half"}


def test_a_success_rise_does_not_fire() -> None:
    rng = np.random.default_rng(5)
    reference = window(rng, 320, start=0.0, success=0.2)
    current = window(rng, 160, start=1e6, success=0.5)
    assert not OutcomeRegressionDetector(alpha=0.01).test(reference, current).fired


def test_without_labels_the_operational_signals_still_run() -> None:
    rng = np.random.default_rng(6)
    reference = window(rng, 100, start=0.0, labeled=0.0)
    current = window(rng, 100, start=1e6, labeled=0.0)
    result = OutcomeRegressionDetector().test(reference, current)
    assert result.status == "ok" and result.evidence["objectives"] == []
    assert {r["signal"] for r in result.evidence["operations"]} >= {"latency_s", "steps_per_trace"}


def test_too_little_of_everything_is_insufficient() -> None:
    rng = np.random.default_rng(7)
    result = OutcomeRegressionDetector().test(
        window(rng, 10, start=0.0), window(rng, 10, start=1e6)
    )
    assert result.status == "insufficient_data" and not result.fired
    assert "no objective with enough labels" in result.evidence["reason"]


def test_eval_traces_are_left_out_by_default() -> None:
    rng = np.random.default_rng(8)
    reference = window(rng, 320, start=0.0)
    current = [
        TraceRecord(t.trace_id, t.agent, started_at=t.started_at, ended_at=t.ended_at,
                    source="eval", steps=t.steps, scores=t.scores)
        for t in window(rng, 160, start=1e6, success=0.05)
    ]  # fmt: skip
    result = OutcomeRegressionDetector().test(reference, current)
    assert result.status == "insufficient_data"


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"min_effect": -1}, "min_effect"),
        ({"min_labels": 2}, "min_labels"),
        ({"min_rate_increase": 1.5}, "min_rate_increase"),
        ({"sources": []}, "sources"),
    ],
)
def test_bad_parameters_name_themselves(params: dict[str, object], name: str) -> None:
    with pytest.raises(DetectorParameterError) as caught:
        build_detector("OUTCOME", params)
    assert caught.value.parameter == name


def test_recent_half_is_the_later_half_of_the_time_span() -> None:
    from detectors.outcome_values import recent_half

    traces = [TraceRecord(f"t{i}", "a", started_at=float(i)) for i in range(11)]
    assert [t.trace_id for t in recent_half(traces)] == [f"t{i}" for i in range(5, 11)]
    assert recent_half([]) == []


@pytest.mark.parametrize(
    ("change", "kwargs"),
    [("tool", {"broken_tool": "search_flights"}), ("latency", {"latency_scale": 2.0})],
)
def test_the_change_is_dated_where_it_began_in_the_window(change: str, kwargs: dict) -> None:
    """An 8-hour window whose last 2 hours broke: the alert's "since" is near the break,
    not the window's start (OUTCOME's 8 h window once dated an outage 7.75 h early)."""
    rng = np.random.default_rng(11)
    reference = window(rng, 640, start=0.0)
    clean = window(rng, 480, start=1e6)  # 6 h at one trace per 45 s
    broken = window(rng, 160, start=1e6 + 480 * 45.0, **kwargs)
    result = OutcomeRegressionDetector(alpha=0.001).test(reference, clean + broken)
    assert result.fired
    began = 1e6 + 480 * 45.0
    assert abs(result.evidence["change_started_at"] - began) <= 20 * 60, change


def test_a_clean_window_carries_no_change_date() -> None:
    rng = np.random.default_rng(12)
    result = OutcomeRegressionDetector(alpha=0.001).test(
        window(rng, 640, start=0.0), window(rng, 320, start=1e6)
    )
    assert not result.fired and "change_started_at" not in result.evidence


# -- an objective a judge predicts ---------------------------------------------------------


def judged_window(
    rng: np.random.Generator,
    n: int,
    *,
    start: float,
    success: float = 0.41,
    agreement: float = 0.85,
    labeled: float = 0.05,
    judge_shift: float = 0.0,
    judge_name: str = "resolved",
) -> list[TraceRecord]:
    """Every trace judged (the judge's verdict agrees with the outcome at ``agreement``, its
    score shifted by ``judge_shift``), a share ``labeled`` of them carrying the label."""
    out = []
    for i in range(n):
        y = float(rng.random() < success)
        verdict = y if rng.random() < agreement else 1.0 - y
        scores = [Score(judge_name, verdict + judge_shift, kind="true", source="eval",
                        predicts="task_success")]  # fmt: skip
        if rng.random() < labeled:
            scores.append(Score("task_success", y, kind="true", source="delayed"))
        t0 = start + i * 20.0
        out.append(TraceRecord(f"t{start:.0f}-{i}", "airline-agent", started_at=t0,
                               ended_at=t0 + 5.0, scores=tuple(scores)))  # fmt: skip
    return out


def without_judge(traces: list[TraceRecord]) -> list[TraceRecord]:
    return [
        TraceRecord(t.trace_id, t.agent, started_at=t.started_at, ended_at=t.ended_at,
                    scores=tuple(s for s in t.scores if s.predicts is None))
        for t in traces
    ]  # fmt: skip


def test_a_real_fall_fires_on_the_judge_corrected_by_few_labels() -> None:
    """A 20-point fall, an 85%-agreement judge on every trace and 5% labels (150 a window of
    3,000): the corrected test fires more often than the labels alone on the same traffic
    (10 and 7 of these 10; over 30 seeds at alpha 3.5e-4, 30 days between false alerts, 22
    and 11)."""
    detector = OutcomeRegressionDetector(alpha=0.01)
    corrected = labels_alone = 0
    for seed in range(10):
        rng = np.random.default_rng(2000 + seed)
        reference = judged_window(rng, 3000, start=0.0)
        current = judged_window(rng, 3000, start=1e6, success=0.21)
        result = detector.test(reference, current)
        corrected += result.fired
        labels_alone += detector.test(without_judge(reference), without_judge(current)).fired
        if result.fired:
            ppi = next(r for r in result.evidence["objectives"]
                       if r["method"] == "ppi" and r["scope"] == "whole window")  # fmt: skip
            words = describe(ppi)
            assert re.match(r"task_success estimated 0\.[345]\d -> 0\.[1-3]\d ", words), words
            assert "(judge resolved on 3,000 traces, corrected by" in words
            assert re.search(r"\d labels; judge agreement 0\.[789]\d\)$", words), words
            rows = [r for r in result.evidence["objectives"] if r["method"] == "ppi"]
            assert {r["scope"] for r in rows} == {"recent half", "whole window"}
            assert all(0 < r["lambda_current"] <= 1 for r in rows)
    assert corrected >= 9 and corrected > labels_alone, (corrected, labels_alone)


@pytest.mark.parametrize("shift", [-0.2, 0.2])
def test_a_judge_that_drifts_while_the_outcome_holds_does_not_fire(shift: float) -> None:
    """The judge's scores move by 0.2 after the onset, the outcome and its labels do not."""
    detector = OutcomeRegressionDetector(alpha=0.01)
    for seed in range(5):
        rows = {}
        for judge_shift in (0.0, shift):
            rng = np.random.default_rng(3000 + seed)
            reference = judged_window(rng, 1500, start=0.0)
            current = judged_window(rng, 1500, start=1e6, judge_shift=judge_shift)
            result = detector.test(reference, current)
            assert not result.fired, result.evidence["summary"]
            objectives = result.evidence["objectives"]
            rows[judge_shift] = next(r for r in objectives if r["scope"] == "whole window")
        moved, held = rows[shift], rows[0.0]
        # The judge alone moved by the shift; the estimate is the one without the shift.
        judge_moved = moved["judge_only_current"] - moved["judge_only_reference"]
        assert judge_moved == pytest.approx(shift + held["judge_only_current"]
                                            - held["judge_only_reference"])  # fmt: skip
        assert moved["after"] == pytest.approx(held["after"])
        assert moved["p_value"] >= 0.01


def test_stationary_judged_windows_fire_at_most_at_alpha() -> None:
    detector = OutcomeRegressionDetector(alpha=0.05)
    fired = 0
    for seed in range(80):
        rng = np.random.default_rng(4000 + seed)
        result = detector.test(
            judged_window(rng, 600, start=0.0, labeled=0.05, agreement=0.75),
            judged_window(rng, 600, start=1e6, labeled=0.05, agreement=0.75),
        )
        fired += result.fired
    # Expected at most 4 of 80 at alpha = 0.05; 10 or more has p < 0.01 under Binomial(80, 0.05).
    assert fired <= 9, fired


def test_judge_scores_are_not_objectives_of_their_own() -> None:
    rng = np.random.default_rng(5)
    result = OutcomeRegressionDetector().test(
        judged_window(rng, 800, start=0.0, labeled=0.1),
        judged_window(rng, 800, start=1e6, labeled=0.1),
    )
    assert {r["name"] for r in result.evidence["objectives"]} == {"task_success"}
    assert set(result.evidence["labels"]) == {"task_success"}


def test_too_few_labels_for_the_correction_fall_back_on_the_labels_alone() -> None:
    """Labels on traces the judge did not score cannot correct it: with 40 labels a window
    but none on judged traces, the labels alone are tested and the row says why."""
    rng = np.random.default_rng(6)
    labeled_only = without_judge(window(rng, 40, start=5e5))
    reference = judged_window(rng, 800, start=0.0, labeled=0.0) + window(rng, 40, start=9e5)
    current = judged_window(rng, 800, start=1e6, labeled=0.0) + labeled_only
    result = OutcomeRegressionDetector().test(reference, current)
    rows = result.evidence["objectives"]
    assert rows and all(r["method"] == "labels" for r in rows)
    whole = next(r for r in rows if r["scope"] == "whole window")
    assert whole["judge"] == "resolved" and "0 of them carry a label" in whole["judge_unused"]


def test_a_judge_alone_gives_no_verdict_and_says_why() -> None:
    """A judge whose scores collapse, with 5 labels a window: nothing fires on the judge."""
    rng = np.random.default_rng(7)
    reference = judged_window(rng, 1000, start=0.0, labeled=0.005)
    current = judged_window(rng, 1000, start=1e6, labeled=0.005, judge_shift=-0.6)
    result = OutcomeRegressionDetector(alpha=0.01).test(reference, current)
    assert not result.fired
    assert result.evidence["objectives"] == []
    reasons = {r["scope"]: r["reason"] for r in result.evidence["objectives_without_verdict"]}
    assert set(reasons) == {"recent half", "whole window"}
    assert "a judge alone gives no verdict" in reasons["whole window"]
    assert "(10 needed to correct it)" in reasons["whole window"]


def test_min_ppi_labels_is_a_checked_parameter() -> None:
    assert OutcomeRegressionDetector(min_ppi_labels=30).min_ppi_labels == 30
    with pytest.raises(DetectorParameterError) as caught:
        build_detector("OUTCOME", {"min_ppi_labels": 1})
    assert caught.value.parameter == "min_ppi_labels"


# -- the judge's pass rate, while its error rates hold -------------------------------------


def harsher(traces: list[TraceRecord], rng: np.random.Generator, share: float) -> list[TraceRecord]:
    """The judge fails ``share`` of the traces it passed; outcomes and labels unchanged."""
    out = []
    for t in traces:
        scores = tuple(
            Score(s.name, 0.0, kind=s.kind, source=s.source, predicts=s.predicts)
            if s.predicts and s.value >= 0.5 and rng.random() < share else s
            for s in t.scores
        )  # fmt: skip
        out.append(TraceRecord(t.trace_id, t.agent, started_at=t.started_at,
                               ended_at=t.ended_at, scores=scores))  # fmt: skip
    return out


def test_a_stable_judge_reads_a_fall_that_five_percent_labels_cannot() -> None:
    """τ-bench's rate for the default windows: a day of reference (1,900 traces) and a
    current window of 640, its recent half 320 with ~16 labels. Success 0.40 -> 0.20 from
    an 85% judge: the judge's pass rate fires at a 30-day level (alpha 3.5e-4) in most
    seeds, with its words, where the judge corrected by the labels fires in fewer."""
    detector = OutcomeRegressionDetector(alpha=3.5e-4)
    fired = corrected = 0
    for seed in range(10):
        rng = np.random.default_rng(7000 + seed)
        reference = judged_window(rng, 1900, start=0.0, success=0.40)
        current = judged_window(rng, 640, start=1e6, success=0.20)
        result = detector.test(reference, current)
        rows = result.evidence["objectives"]
        corrected += any(r["fired"] for r in rows if r["method"] == "ppi")
        stable = [r for r in rows if r["method"] == "judge_stable"]
        assert [r["scope"] for r in stable] in (["recent half"], [])
        if result.fired:
            fired += 1
            words = result.evidence["summary"]
            assert re.match(
                r"task_success estimated 0\.[345]\d -> 0\.[0-2]\d from judge resolved's pass "
                r"rate 4\d% -> [23]\d% on 3\d\d traces, if its error rates hold \(on \d+ labels "
                r"it passes [789]\d% of successes and [0-2]\d% of failures; the window's \d+ "
                r"agree\), p=", words), words  # fmt: skip
            assert result.evidence["change_started_at"] >= 1e6
    assert fired >= 7 and fired > corrected, (fired, corrected)


@pytest.mark.parametrize("labeled", [0.05, 0.25])
def test_a_harsher_judge_is_caught_by_enough_labels_and_named_otherwise(labeled: float) -> None:
    """The judge fails a third of what it passed, the outcome holds. With a quarter of the
    traces labeled the class-by-class check (or the labels' lean) keeps the judge's pass
    rate out: nothing fires at the 30-day level in 10 seeds. With 5% it cannot always (16
    labels a recent half): the limit of reading the judge, which JUDGE watches over its
    longer windows; what fires then says it is the judge's pass rate, read on the stated
    assumption."""
    detector = OutcomeRegressionDetector(alpha=3.5e-4)
    fired = 0
    for seed in range(10):
        rng = np.random.default_rng(8000 + seed)
        reference = judged_window(rng, 1900, start=0.0, success=0.40, labeled=labeled)
        current = harsher(judged_window(rng, 640, start=1e6, success=0.40, labeled=labeled),
                          rng, 1 / 3)  # fmt: skip
        result = detector.test(reference, current)
        if result.fired:
            fired += 1
            assert {r["method"] for r in result.evidence["objectives"] if r["fired"]} == {
                "judge_stable"}  # fmt: skip
            assert "from judge resolved's pass rate" in result.evidence["summary"]
            assert "if its error rates hold" in result.evidence["summary"]
    assert fired == 0 if labeled == 0.25 else fired <= 2, fired


# -- tokens and cost per trace -------------------------------------------------------------


def with_tokens(traces: list[TraceRecord], rng: np.random.Generator, scale: float = 1.0,
                nested: bool = False) -> list[TraceRecord]:  # fmt: skip
    """Each model step with a token count (~2,500 a call, times ``scale``) and its cost."""
    out = []
    for t in traces:
        steps = []
        for s in t.steps:
            if s.kind == "llm":
                n = int(rng.lognormal(7.8, 0.3) * scale)
                s = Step(s.index, s.kind, s.name, tokens=n, cost=n * 2.5e-6)
            steps.append(s)
        out.append(TraceRecord(t.trace_id, t.agent, started_at=t.started_at,
                               ended_at=t.ended_at, status=t.status, steps=tuple(steps),
                               scores=t.scores))  # fmt: skip
    return out


def test_doubled_tokens_fire_on_tokens_and_cost_and_are_worded() -> None:
    rng = np.random.default_rng(41)
    reference = with_tokens(window(rng, 320, start=0.0), rng)
    current = with_tokens(window(rng, 160, start=1e6), rng, scale=2.0)
    result = OutcomeRegressionDetector(alpha=0.001).test(reference, current)
    assert result.fired
    fired = {r["signal"] for r in result.evidence["operations"] if r["fired"]}
    assert fired == {"tokens_per_trace", "cost_per_trace"}, fired
    assert re.search(r"median tokens per trace rose [\d,]+ -> [\d,]+, p=",
                     result.evidence["summary"]), result.evidence["summary"]  # fmt: skip
    assert "median cost per trace rose $" in result.evidence["summary"]
    assert result.evidence["change_started_at"] >= 1e6


def test_stationary_token_counts_fire_at_most_at_alpha() -> None:
    fired = 0
    for seed in range(40):
        rng = np.random.default_rng(4100 + seed)
        result = OutcomeRegressionDetector(alpha=0.05).test(
            with_tokens(window(rng, 200, start=0.0), rng),
            with_tokens(window(rng, 100, start=1e6), rng),
        )
        fired += any(r["fired"] for r in result.evidence["operations"]
                     if r["signal"] in ("tokens_per_trace", "cost_per_trace"))  # fmt: skip
    assert fired <= 5, fired  # at most 2 expected of 40; 6 or more has p < 0.05


def test_trace_tokens_sum_the_model_steps_and_are_none_without_counts() -> None:
    steps = (Step(0, "llm", "chat", tokens=1200, cost=0.003), Step(1, "tool", "search"),
             Step(2, "llm", "chat", tokens=800), Step(3, "llm", "chat"))  # fmt: skip
    t = TraceRecord("t", "a", steps=steps)
    assert t.tokens == 2000 and t.cost == pytest.approx(0.003)
    assert TraceRecord("u", "a", steps=(Step(0, "llm", "chat"),)).tokens is None
