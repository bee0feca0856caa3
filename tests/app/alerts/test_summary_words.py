"""An alert's summary leads with the detector's sentence, or says the chart opened it."""

from __future__ import annotations

from types import SimpleNamespace

from app.alerts.lifecycle import _summary


def run(**evidence: object) -> SimpleNamespace:
    return SimpleNamespace(
        statistic=7.5, threshold=3.76, p_value=3e-8, n_current=326, n_reference=674,
        evidence=evidence,
    )  # fmt: skip


def test_the_detector_sentence_leads() -> None:
    text = _summary(run(summary="task_success fell 0.42 -> 0.2 on 190 labels (reference 674)"))
    assert text.startswith("task_success fell 0.42 -> 0.2 on 190 labels")
    assert text.endswith("(326 current vs 674 reference)")


def test_an_alert_the_chart_opened_says_what_moved_not_that_nothing_did() -> None:
    text = _summary(
        run(
            summary="no outcome got worse; closest: task_success fell 0.44 -> 0.25, p=0.018",
            closest="task_success fell 0.44 -> 0.25 on 48 labels (reference 161), p=0.018",
            opened_by="sequential chart",
        )
    )
    assert text.startswith("sustained over several runs: task_success fell 0.44 -> 0.25")
    assert "no outcome got worse" not in text


def test_without_words_the_numbers_remain() -> None:
    assert _summary(run()).startswith("statistic 7.5 over threshold 3.76, p=3e-08")
