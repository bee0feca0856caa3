"""Why an item was picked, in an annotator's words, read from the reasons the fill job,
FM-4's label requests and the judge checks actually write (so a change to one of them
that the annotator's sentence no longer reads fails here)."""

from __future__ import annotations

from datetime import UTC, datetime

from app.labeling import boosts, requests
from app.labeling.why import why_picked
from app.models.labeling import QueueItem

T = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)


def _window(mode: str, *, stream: str | None = None, agent: str | None = None) -> str:
    w = boosts.FiredWindow(mode, "default " + mode, stream, agent, T, T.replace(hour=11), T)
    return f"novelty 0.412 in stream vlm.image; boosted ×2: {w.describe()}"


def test_a_plain_pick_is_unlike_anything_labeled_so_far() -> None:
    item = QueueItem(stream="support-agent.input", novelty=0.41, boost=1.0,
                     reason="novelty 0.412 in stream support-agent.input")  # fmt: skip
    text = why_picked(item)
    assert text.startswith("Unlike anything labeled so far")
    assert "requests to support-agent" in text and "novelty" not in text


def test_a_boosted_pick_names_the_alert_and_its_window() -> None:
    drift = why_picked(QueueItem(stream="vlm.image", novelty=0.4, boost=2.0,
                                 reason=_window("FM-6", stream="vlm.image")))  # fmt: skip
    assert "from the window where the drift alert fired on vlm.image" in drift
    assert "(2026-12-05 09:00–11:00 UTC)" in drift
    outcome = why_picked(QueueItem(stream="a.input", novelty=0.4, boost=2.0,
                                   reason=_window("OUTCOME")))  # fmt: skip
    assert "from the window where the outcome alert fired (2026-12-05" in outcome


def test_a_judge_check_says_what_the_judge_decided() -> None:
    reason = ("judge check: evaluator helpful (v3) scored 0.20 ('no order number'); a label "
              "here measures how far the judge can be trusted (4 of 100 checked this week)")  # fmt: skip
    text = why_picked(QueueItem(novelty=None, boost=1.0, reason=reason))
    assert text.startswith("A judge check: the judge helpful failed it (0.20")
    passed = reason.replace("scored 0.20", "scored 0.90")
    assert "the judge helpful passed it" in why_picked(QueueItem(novelty=None, reason=passed))


def test_an_fm4_request_says_labels_are_scarce_here() -> None:
    req = boosts.LabelRequest("accuracy", T, T.replace(hour=11), [], 0.04)
    row = requests._row("trace:t1", "t1", T, req, "support-agent", {"agent": "support-agent"})
    text = why_picked(QueueItem(novelty=None, boost=2.0, reason=row["reason"]))
    assert text.startswith("Too few traces like this one have a label (label coverage 0.04")


def test_an_unknown_reason_is_shown_as_written() -> None:
    assert why_picked(QueueItem(novelty=None, reason="picked by hand")) == "picked by hand"
