"""A monitor's health in words, kept apart from how its last run went.

Health is what on-call asks first: is it firing, quiet, or has it not judged anything yet
(and when will it)? It comes from the open alerts and the last run that gave a verdict
(status ``ok``), never from the last run alone: a run with too little data after a
verdict neither clears nor hides it. The last run's own status (ok, insufficient data,
failed) is shown beside it as what it is.

A young monitor's first verdict needs a reference window, the lag before the current
window and the current window of data (:class:`app.monitors.decision.baseline.BaselinePolicy`:
with little history the lag shrinks to one current window), so it is expected that long
after the project's first trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from app.alerts.sentences import STATISTIC_NAMES
from app.models import DetectorRun, Monitor
from app.monitors.decision.baseline import BaselinePolicy
from app.monitors.defaults import default_monitor_bodies

FIRING, QUIET, WAITING = "firing", "quiet", "no verdict yet"


@dataclass(frozen=True)
class Health:
    state: str  # firing | quiet | no verdict yet
    words: str
    statistic_name: str
    verdict: DetectorRun | None  # the last run with status ok
    last_run: DetectorRun | None


def history_needed(selection: Mapping[str, Any] | None, *, judged: bool = False) -> timedelta:
    """Data a first verdict needs (:attr:`BaselinePolicy.history_needed`, the one place);
    ``judged``: the project has an online evaluator predicting an objective, which brings
    a monitor's young windows in (:func:`app.monitors.decision.baseline.policy_in_force`).

    >>> history_needed({"current_window_seconds": 7200, "reference_window_seconds": 14400})
    datetime.timedelta(seconds=28800)
    """
    policy = BaselinePolicy.from_selection(
        {k: v for k, v in (selection or {}).items() if v is not None}
    )
    young = policy.young
    if young is not None and (judged or not policy.young_requires_judge):
        return young.history_needed
    return policy.history_needed


def judged_first_verdicts() -> dict[str, float]:
    """Hours before the first verdict of the defaults whose young windows an online
    evaluator brings in, by failure mode (OUTCOME: 8 h instead of 24)."""
    return {
        b.failure_mode: history_needed(b.selection.model_dump(), judged=True).total_seconds()
        / 3600
        for b in default_monitor_bodies()
        if b.selection.young_windows is not None
    }


def defaults_first_verdicts() -> dict[str, float]:
    """Hours of traffic before each default monitor's first verdict, by failure mode."""
    return {
        b.failure_mode: history_needed(b.selection.model_dump()).total_seconds() / 3600
        for b in default_monitor_bodies()
    }


def first_verdict_groups() -> list[tuple[float, list[str]]]:
    """The defaults by hours of traffic before their first verdict, soonest first."""
    groups: dict[float, list[str]] = {}
    for mode, hours in defaults_first_verdicts().items():
        groups.setdefault(hours, []).append(mode)
    return sorted(groups.items())


def first_verdicts_words() -> str:
    """``after 1.5 h of data (SILENCE, EARLY), 8 h (FM-1, ...), 24 h (FM-4, OUTCOME)``: the words
    ``telltale init`` and the overview use."""
    parts = [f"{h:g} h ({', '.join(modes)})" for h, modes in first_verdict_groups()]
    judged = "".join(
        f"; {mode} after {h:g} h with an online evaluator"
        for mode, h in judged_first_verdicts().items()
    )
    return f"after {parts[0].replace(' h (', ' h of data (', 1)}" + "".join(
        f", {p}" for p in parts[1:]
    ) + judged


def _at(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M UTC")


def _num(x: float | None) -> str:
    return "–" if x is None or x != x else f"{x:.3g}"


def health(
    monitor: Monitor,
    *,
    open_alerts: int,
    verdict: DetectorRun | None,
    last_run: DetectorRun | None,
    first_data: datetime | None,
    now: datetime,
    judged: bool = False,
) -> Health:
    name = STATISTIC_NAMES.get(monitor.failure_mode, "statistic")
    if open_alerts:
        words = f"Firing: {open_alerts} open alert{'s' if open_alerts != 1 else ''}"
        if verdict is not None:
            words += f"; last verdict {name} {_num(verdict.statistic)} vs threshold {_num(verdict.threshold)}"
        return Health(FIRING, words + ".", name, verdict, last_run)
    if verdict is not None:
        words = (
            f"Quiet: {name} {_num(verdict.statistic)}, threshold {_num(verdict.threshold)}, "
            f"at {_at(verdict.at)}."
        )
        return Health(QUIET, words, name, verdict, last_run)
    needed = history_needed(monitor.selection, judged=judged)
    hours = needed.total_seconds() / 3600
    if not monitor.enabled:
        words = "No verdict yet: the monitor is paused."
    elif first_data is None:
        words = f"No verdict yet: the first needs {hours:g} h of traffic, and none has arrived."
    elif first_data + needed > now:
        words = (
            f"No verdict yet: the first is expected at {_at(first_data + needed)} "
            f"({hours:g} h after the first trace)."
        )
    else:
        reason = (last_run.evidence or {}).get("reason") if last_run is not None else None
        words = "No verdict yet" + (
            f": the last run had {reason}."
            if isinstance(reason, str) and reason
            else ": waiting for the next run."
        )
    return Health(WAITING, words, name, verdict, last_run)
