"""An alert rule's run -> one alert verdict per group, each with the sentence on-call reads.

The rule's detector (:class:`detectors.rules.detector.RuleDetector`) leaves each group's
verdict in the run's evidence; the record stage hands them to the lifecycle
(:func:`app.alerts.lifecycle.record_groups`). The sentence says what, how much, where and
since when, as every alert's does:

    p95 latency (agent=checkout) was 2,340 ms over the last 15 min, above the critical
    level 2,000 ms (held 10 min).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.alerts.lifecycle import GroupVerdict
from app.models import Alert, Monitor


def fmt_value(value: float | None, unit: str) -> str:
    """A value as people read it.

    >>> fmt_value(2340.4, "ms"), fmt_value(0.0712, "ratio"), fmt_value(1.5, "USD/h")
    ('2,340 ms', '7.12%', '1.5 USD/h')
    """
    if value is None:
        return "no data"
    if unit == "ratio":
        return f"{value * 100:.3g}%"
    if unit == "ms":
        return f"{value:,.0f} ms" if value >= 10 else f"{value:.3g} ms"
    text = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    return f"{text} {unit}"


def _minutes(seconds: int) -> str:
    return f"{seconds // 3600} h" if seconds % 3600 == 0 else f"{seconds // 60} min"


def sentence(evidence: Mapping[str, Any], group: Mapping[str, Any], *, op: str,
             for_seconds: int) -> str:  # fmt: skip
    """The alert's sentence for one group of a rule's run."""
    where = ", ".join(f"{k}={v}" for k, v in group["labels"].items())
    what = f"{evidence['label']}" + (f" ({where})" if where else "")
    unit, window = evidence["unit"], _minutes(int(evidence["window_seconds"]))
    if group.get("no_data"):
        return f"{what} had no data over the last {window}."
    level = group.get("fired") or group.get("level") or "ok"
    bound = fmt_value(group.get("threshold"), unit)
    held = f" (held {_minutes(for_seconds)})" if for_seconds else ""
    side = "above" if op == "above" else "below"
    if level == "ok":
        return f"{what} was {fmt_value(group.get('value'), unit)} over the last {window}."
    return (f"{what} was {fmt_value(group.get('value'), unit)} over the last {window}, "
            f"{side} the {level} level {bound}{held}.")  # fmt: skip


def verdicts(monitor: Monitor, evidence: Mapping[str, Any]) -> list[GroupVerdict]:
    """Each group's verdict from a rule run's evidence (none for a run that tested nothing)."""
    rule = (monitor.detector_params or {}).get("rule") or {}
    cond = rule.get("condition") or {}
    out = []
    for g in evidence.get("groups") or []:
        fired = g.get("fired")
        out.append(GroupVerdict(
            labels={str(k): str(v) for k, v in g["labels"].items()},
            fired=fired is not None,
            severity=fired or monitor.severity,
            summary=sentence(evidence, g, op=cond.get("op", "above"),
                             for_seconds=int(cond.get("for_seconds", 0))),
            evidence={**{k: v for k, v in evidence.items() if k != "groups"}, "group": g},
            pending=bool(g.get("pending")),
            # Clean only below every level: a group still at its level but not for its
            # ``for`` again (after a dip) keeps its alert open, as the preview shows.
            clean=g.get("level_n", 0) <= 0,
        ))  # fmt: skip
    return out


def gone(monitor: Monitor, labels: dict[str, str], alert: Alert) -> GroupVerdict:
    """The verdict of a group with an open alert and no traffic left in the run's series:
    its rule's no-data mode decides, as for an empty window (``ok``: a clean evaluation;
    ``alerting``: it fires at the rule's worst level; ``keep``: neither)."""
    cond = ((monitor.detector_params or {}).get("rule") or {}).get("condition") or {}
    mode = cond.get("no_data", "ok")
    where = ", ".join(f"{k}={v}" for k, v in labels.items())
    said = f"No traffic{f' for {where}' if where else ''} in the rule's window."
    return GroupVerdict(
        labels=labels, fired=mode == "alerting", severity=monitor.severity,
        summary=said if mode == "alerting" else alert.summary, evidence=alert.evidence or {},
        clean=mode == "ok",
    )  # fmt: skip
