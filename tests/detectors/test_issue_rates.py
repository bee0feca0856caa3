"""detectors/issue_rates.py: shares, not counts; new and rising issues; the effect gates;
Holm over issues; one group verdict per issue; the false-alarm rate on steady issues."""

from __future__ import annotations

import numpy as np
import pytest

from detectors.issue_rates import IssueCount, IssueRateDetector


def count(issue: int, hit: int, traces: int, agent: str = "a") -> IssueCount:
    return IssueCount(issue, f"error {issue}", f"tool{issue}", agent, "ToolError", hit, traces)


def test_twice_the_traffic_with_the_same_rate_is_no_change() -> None:
    r = IssueRateDetector().test([count(1, 50, 1000)], [count(1, 100, 2000)])
    assert r.status == "ok" and not r.fired


def test_an_old_failure_that_doubles_its_share_alerts() -> None:
    r = IssueRateDetector().test([count(1, 50, 1000)], [count(1, 60, 500)])
    assert r.fired
    (row,) = r.evidence["issues"]
    assert not row["new"] and row["share"] == pytest.approx(0.12)
    assert r.evidence["groups"] == [{
        "labels": {"issue": "1"}, "fired": "", "clean": True,
        "summary": 'Failure rising in tool tool1 of a: "error 1" in 60 of 500 traces (50 of 1,000 before).',
    }]  # fmt: skip


def test_the_gates_hold_a_significant_but_small_change() -> None:
    # Two new traces out of ten: significant against 10,000 clean traces, under min_hit.
    assert not IssueRateDetector().test([count(9, 0, 10_000)], [count(1, 2, 10)]).fired
    assert IssueRateDetector(min_hit=2).test([count(9, 0, 10_000)], [count(1, 2, 10)]).fired
    # 1.3 times the share: under min_ratio however significant.
    r = IssueRateDetector().test([count(1, 1000, 10_000)], [count(1, 1300, 10_000)])
    assert r.p_value is not None and r.p_value < 1e-6 and not r.fired


def test_no_reference_traffic_for_the_agent_is_no_verdict() -> None:
    r = IssueRateDetector().test([count(1, 5, 100, agent="a")], [count(2, 9, 10, agent="b")])
    assert r.status == "insufficient_data" and not r.fired


def test_steady_issues_alert_at_most_at_alpha() -> None:
    rng = np.random.default_rng(5)
    det = IssueRateDetector(alpha=0.05)
    fired = 0
    for _ in range(300):
        ref = [count(i, int(rng.binomial(2400, 0.01 * i)), 2400) for i in range(1, 21)]
        cur = [count(i, int(rng.binomial(100, 0.01 * i)), 100) for i in range(1, 21)]
        fired += det.test(ref, cur).fired
    assert fired <= 300 * 0.05 + 3 * np.sqrt(300 * 0.05)
