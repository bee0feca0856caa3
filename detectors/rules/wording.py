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
