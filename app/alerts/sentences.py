"""One plain sentence per alert, built from the detector's evidence.

The alert page, the alert list and every notification (webhook, Slack, PagerDuty,
Alertmanager) say the same thing: what changed, before -> after, where (agent, version,
tool, stream, objective), since when and on how many traces or labels. The detectors'
evidence carries the numbers; this module only words them, one function per failure mode
(:mod:`app.alerts.mode_wording`).
Unknown or partial evidence falls back to the detector's own ``summary`` and then to the
statistic against its threshold, so a sentence is always produced and never raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from app.alerts.mode_wording import WORDING, fmt_number, mapping

# What each mode's run statistic is, for charts and the numbers line.
STATISTIC_NAMES = {
    "FM-1": "compounding ratio",
    "FM-2": "cascade lift",
    "FM-3": "decision disagreement",
    "FM-4": "estimated accuracy drop",
    "FM-5": "excess over the eval harness",
    "FM-6": "drift statistic",
    "FM-7": "proxy-vs-true test score",
    "OUTCOME": "outcome test score",
    "SILENCE": "silence test score",
    "EARLY": "first-hours guard score",
    "JUDGE": "judge agreement test score",
    "ISSUES": "failure issue test score",
}

# What a run's ``n_current`` counts, per mode (traces unless said).
COUNTED: dict[str, str | None] = {"FM-6": "vectors", "SILENCE": None, "ISSUES": None}  # None: not said

# Our own words start with a capital; a name (agent, objective, stream) keeps its case.
PROSE_STARTS = frozenset(
    "after tool the estimated label stream proxies true decisions failed median sustained "
    "confidence slower statistic agent traffic vectors scores captured first-hours".split()
) | {name.split()[0] for name in STATISTIC_NAMES.values()}


def one_line(text: str) -> str:
    """``text`` with every run of white space (line breaks included) as one space: a name
    from span text (a tool called ``"search\\n[CRITICAL] ..."``) cannot add a line.

    >>> one_line("search\\r\\n  [CRITICAL]\\u2028x")
    'search [CRITICAL] x'
    """
    return " ".join(text.split())


def numbers(
    *,
    failure_mode: str,
    statistic: float | None,
    threshold: float | None,
    p_value: float | None = None,
) -> str:
    """The run's statistic against its threshold, named: ``cascade lift 10.1 over 3.7``."""
    name = STATISTIC_NAMES.get(failure_mode, "statistic")
    text = f"{name} {fmt_number(statistic, 4)} over threshold {fmt_number(threshold, 4)}"
    return text + (f", p={p_value:.2g}" if isinstance(p_value, float) else "")


def _where(scope: Mapping[str, Any] | None) -> str:
    scope = scope or {}
    parts = [
        f"{k.replace('_', ' ')} {scope[k]}" for k in ("agent", "agent_version") if scope.get(k)
    ]
    return f"{', '.join(parts)}: " if parts else ""


def _since(ev: Mapping[str, Any], since: datetime | None) -> str:
    """``Since <the change>`` where a change point was estimated in the window; otherwise
    ``First seen <the first run that fired>``: never the window's start, hours before the
    change (an outage at 06:00 once read "Since 22:15" the evening before)."""
    held = mapping(ev.get("baseline"))
    started = held.get("degradation_started_at")
    if isinstance(started, str) and started:
        try:
            when = datetime.fromisoformat(started.replace("Z", "+00:00")).strftime(
                "%Y-%m-%d %H:%M UTC"
            )
        except ValueError:
            when = started
        if held.get("onset") == "first fired run":
            return f"First seen {when}"
        return f"Since {when}"
    return since.strftime("Since %Y-%m-%d %H:%M UTC") if since is not None else ""


def _as_closest(ev: Mapping[str, Any]) -> Mapping[str, Any]:
    """The evidence with its most significant sub-test marked fired: the words of a run
    that no single test made significant, for an alert the chart over runs opened."""
    key = "sub_tests" if "sub_tests" in ev else "subtests"
    subs = mapping(ev.get(key))
    ps = {
        name: sub["p_value"]
        for name, sub in subs.items()
        if isinstance(sub, Mapping) and isinstance(sub.get("p_value"), (int, float))
    }
    if not ps:
        return ev
    best = min(ps, key=lambda name: ps[name])
    return {**ev, key: {**subs, best: {**subs[best], "fired": True}}}


def sentence(
    *,
    failure_mode: str,
    evidence: Any,
    statistic: float | None = None,
    threshold: float | None = None,
    p_value: float | None = None,
    n_current: int | None = None,
    scope: Mapping[str, Any] | None = None,
    since: datetime | None = None,
) -> str:
    """What changed, before -> after, where, since when and on how many traces.

    >>> sentence(failure_mode="FM-2", evidence={"available_but_wrong": [{"tool": "http_fetch",
    ...     "rate": 0.22, "reference_rate": 0.0, "calls": 95, "p_value": 1e-9, "effect_ok": True}],
    ...     "baseline": {"degradation_started_at": "2026-12-03T20:30:00Z"}}, n_current=272)
    'Tool http_fetch returns wrong results with a success status in 22% of 95 calls (0% before). Since 2026-12-03 20:30 UTC, on 272 traces.'
    """
    ev = mapping(evidence)
    said: str | None = None
    chart = ev.get("opened_by") == "sequential chart"
    if chart and isinstance(ev.get("closest"), str):
        # No single run was significant; the chart added runs up. Say what moved.
        said = f"sustained over several runs: {ev['closest']}"
    wording = WORDING.get(failure_mode)
    if said is None and wording is not None:
        try:
            said = wording(_as_closest(ev) if chart else ev)
        except (TypeError, ValueError, KeyError, AttributeError):
            said = None  # evidence of an older shape: fall back to the detector's words
        if said is not None and chart:
            said = f"sustained over several runs: {said}"
    if said is None and isinstance(ev.get("summary"), str) and ev["summary"]:
        said = ev["summary"]
    if said is None:
        said = numbers(
            failure_mode=failure_mode, statistic=statistic, threshold=threshold, p_value=p_value
        )
    said = _where(scope) + said
    tail = []
    when = _since(ev, since)
    if when:
        tail.append(when)
    unit = COUNTED.get(failure_mode, "traces")
    if n_current and unit is not None:
        tail.append(f"on {n_current} {unit}")
    said = one_line(said)
    first = said.split(" ", 1)[0]
    text = (said[:1].upper() + said[1:] if first in PROSE_STARTS else said) + "."
    return f"{text} {', '.join(tail)}." if tail else text


def title(failure_mode: str, monitor_name: str) -> str:
    """``FM-2 tool failure cascades``, not ``FM-2 FM-2 tool failure cascades``."""
    monitor_name = one_line(monitor_name)
    if monitor_name.startswith(failure_mode):
        return monitor_name
    return f"{failure_mode} {monitor_name}".strip()
