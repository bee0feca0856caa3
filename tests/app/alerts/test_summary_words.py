"""An alert's summary is one plain sentence from the evidence, or says the chart opened it."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

from app.alerts.lifecycle import summary as _summary


def run(failure_mode: str = "OUTCOME", **evidence: object) -> SimpleNamespace:
    return SimpleNamespace(
        failure_mode=failure_mode, statistic=7.5, threshold=3.76, p_value=3e-8, n_current=326,
        n_reference=674, window_start=datetime(2026, 12, 3, 20, tzinfo=UTC), evidence=evidence,
    )  # fmt: skip


def test_the_detector_words_lead_when_the_mode_has_no_wording_of_its_own() -> None:
    text = _summary(run("FM-9", summary="task_success fell 0.42 -> 0.2 on 190 labels"))
    assert text.startswith("task_success fell 0.42 -> 0.2 on 190 labels.")
    assert text.endswith("Since 2026-12-03 20:00 UTC, on 326 traces.")


def test_an_alert_the_chart_opened_says_what_moved_not_that_nothing_did() -> None:
    text = _summary(
        run(
            summary="no outcome got worse; closest: task_success fell 0.44 -> 0.25, p=0.018",
            closest="task_success fell 0.44 -> 0.25 on 48 labels (reference 161), p=0.018",
            opened_by="sequential chart",
        )
    )
    assert text.startswith("Sustained over several runs: task_success fell 0.44 -> 0.25")
    assert "no outcome got worse" not in text


def test_without_words_the_numbers_remain_named() -> None:
    assert _summary(run("FM-2")).startswith("Cascade lift 7.5 over threshold 3.76, p=3e-08.")


def test_the_monitor_scope_says_where() -> None:
    text = _summary(run("FM-2"), scope={"agent": "support-agent", "agent_version": "1.5.0"})
    assert text.startswith("Agent support-agent, agent version 1.5.0: cascade lift 7.5")


def test_a_judge_corrected_fall_says_the_judge_the_labels_and_the_agreement() -> None:
    row = {"signal": "objective", "method": "ppi", "name": "task_success", "judge": "resolved",
           "before": 0.41, "after": 0.22, "n_current": 64, "n_judged_current": 1180,
           "agreement_measure": "accuracy", "agreement": 0.86, "p_adjusted": 1e-6,
           "fired": True}  # fmt: skip
    text = _summary(run(objectives=[row], operations=[]))
    assert text.startswith(
        "task_success estimated 0.41 → 0.22 (judge resolved on 1,180 traces, corrected by 64 "
        "labels; judge agreement 0.86)."
    )


def test_a_judge_whose_agreement_fell_is_named() -> None:
    row = {"summary": "judge resolved agreed with 62.0% of 48 task_success labels (reference "
                      "86.0% of 150), p=2e-05", "fired": True}  # fmt: skip
    text = _summary(run("JUDGE", judges=[row]))
    assert text.startswith("Judge resolved agreed with 62.0% of 48 task_success labels")
