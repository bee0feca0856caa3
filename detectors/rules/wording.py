"""What a rule's alert says: one sentence per group, what, how much, where and over what.

p95 latency (agent=checkout) was 2,340 ms over the last 15 min, above the critical
level 2,000 ms (held 10 min).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


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


def sentence(evidence: Mapping[str, Any], group: Mapping[str, Any], *, condition: Any) -> str:
    """The alert's sentence for one group of a rule's run (``condition``: the rule's).

    >>> from detectors.rules.spec import CalibratedCondition
    >>> ev = {"label": "trace error rate", "unit": "ratio", "window_seconds": 900}
    >>> sentence(ev, {"labels": {"agent": "shop"}, "value": 0.2, "fired": "warning",
    ...               "baseline": 0.05, "p_value": 1e-9}, condition=CalibratedCondition())
    'trace error rate (agent=shop) was 20% over the last 15 min, up from 5% in the 7 days before (p = 1e-09, calibrated for 30 days between false alerts).'
    """
    op = getattr(condition, "op", None)
    for_seconds = int(getattr(condition, "for_seconds", 0))
    if op is None:
        return _calibrated(evidence, group, condition, for_seconds)
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


def _calibrated(evidence: Mapping[str, Any], group: Mapping[str, Any], cond: Any,
                for_seconds: int) -> str:  # fmt: skip
    where = ", ".join(f"{k}={v}" for k, v in group["labels"].items())
    what = f"{evidence['label']}" + (f" ({where})" if where else "")
    unit, window = evidence["unit"], _minutes(int(evidence["window_seconds"]))
    if group.get("no_data"):
        return f"{what} had no data over the last {window}."
    value, base = group.get("value"), group.get("baseline")
    said = f"{what} was {fmt_value(value, unit)} over the last {window}"
    if base is None or value is None:
        return said + "."
    days = cond.reference_seconds / 86400
    ref = f"{days:g} days" if days >= 1 else _minutes(cond.reference_seconds)
    way = "up" if value >= base else "down"
    held = f", held {_minutes(for_seconds)}" if for_seconds else ""
    if not group.get("fired"):
        return f"{said}, against {fmt_value(base, unit)} in the {ref} before."
    p = group.get("p_value")
    return (f"{said}, {way} from {fmt_value(base, unit)} in the {ref} before (p = {p:.2g}, "
            f"calibrated for {cond.expected_days_between_false_alerts:g} days between false "
            f"alerts{held}).")  # fmt: skip
