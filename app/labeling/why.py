"""Why an item was picked, in an annotator's words.

The stored ``reason`` is written for the developer who tunes the fill job ("novelty 0.412 in
stream support-agent.input; boosted ×2: FM-6 drift fired on ..."); an annotator needs to
know what is special about the item in front of them, which changes how they look at it:
an item unlike anything labeled so far, an item from the window where an alert fired, an
item whose label checks a judge. The reasons are written by this package alone
(:mod:`app.labeling.fill`, :mod:`app.labeling.requests`, :mod:`app.labeling.judge_checks`),
so their shapes are known here; an unknown shape falls back to the stored text.
"""

from __future__ import annotations

import re

from app.models.labeling import QueueItem

_BOOST = re.compile(
    r"boosted ×[\d.]+: (FM-\d|OUTCOME) \w[\w ]*? fired on (stream|agent|project)(?: (\S+))? "
    r"\([^,]*, window (\d{4}-\d\d-\d\d \d\d:\d\d)–(\d\d:\d\d) UTC\)"
)
_JUDGE = re.compile(r"judge check: evaluator (.+?) \(v\d+\) scored (-?[\d.]+) \((.*)\); a label")
_REQUEST = re.compile(r"requested by FM-4 \([^)]*\): (.*?) in cohort (\S+)")
ALERTS = {"FM-6": "the drift alert", "FM-4": "the accuracy alert", "OUTCOME": "the outcome alert"}


def what_of(stream: str | None) -> str:
    """The samples of a stream, named as an annotator knows them."""
    if not stream:
        return "samples"
    if stream.endswith(".input"):
        return f"requests to {stream.removesuffix('.input')}"
    if stream.endswith(".output"):
        return f"answers of {stream.removesuffix('.output')}"
    if stream.endswith(".image"):
        return "images"
    return f"{stream} samples"


def why_picked(item: QueueItem) -> str:
    """One or two sentences: why this item, and what the label is for.

    >>> why_picked(QueueItem(stream="vlm.image", novelty=0.8312, boost=1.0, reason=""))
    'Unlike anything labeled so far: among the recent images, one of the farthest from those already seen or labeled.'
    >>> why_picked(QueueItem(stream=None, novelty=None, boost=1.0, reason=(
    ...     "judge check: evaluator helpful (v2) scored 0.90 ('cites the order'); a label "
    ...     "here measures how far the judge can be trusted (3 of 100 checked this week)")))
    "A judge check: the judge helpful passed it (0.90, 'cites the order'). Your label shows whether the judge can be trusted."
    """
    reason = item.reason or ""
    judged = _JUDGE.search(reason)
    if judged:
        name, value, said = judged.groups()
        verdict = "passed" if float(value) >= 0.5 else "failed"
        return (
            f"A judge check: the judge {name} {verdict} it ({value}, {said}). "
            "Your label shows whether the judge can be trusted."
        )
    asked = _REQUEST.search(reason)
    if asked:
        coverage, cohort = asked.groups()
        return (
            f"Too few traces like this one have a label ({coverage}, {cohort}): "
            "your label lets the accuracy estimate speak for them."
        )
    if item.novelty is None:
        return reason
    text = (
        f"Unlike anything labeled so far: among the recent {what_of(item.stream)}, "
        "one of the farthest from those already seen or labeled."
    )
    boosted = _BOOST.search(reason)
    if boosted:
        mode, scope, where, start, end = boosted.groups()
        alert = ALERTS.get(mode, f"the {mode} alert")
        on = f" on {where}" if scope != "project" and where else ""
        text += f" It is from the window where {alert} fired{on} ({start}–{end} UTC)."
    return text
