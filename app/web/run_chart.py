"""A monitor's runs as an SVG drawn on the server: on its page, and around an alert.

Drawn here rather than by a script so the chart reads with JavaScript off and under the
CSP (presentation attributes, no style attributes): the statistic per run, its threshold
(dashed), and around an alert the frozen baseline's reference window (shaded), the onset
the baseline records (a vertical line) and the time the alert was open (a red band). The
value axis is labelled at round numbers (:func:`ticks`). Every text is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from markupsafe import Markup, escape

W, H, LEFT, RIGHT, TOP, BOTTOM = 900, 260, 60, 14, 14, 40


@dataclass(frozen=True)
class RunPoint:
    at: datetime
    statistic: float | None
    threshold: float | None
    fired: bool
    status: str


@dataclass(frozen=True)
class Marks:
    """Times on the chart: the baseline's reference window, the onset, the open period."""

    reference: tuple[datetime, datetime] | None = None
    onset: datetime | None = None
    opened: datetime | None = None
    closed: datetime | None = None


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def ticks(lo: float, hi: float, *, at_most: int = 6) -> list[float]:
    """Round values (1, 2, 2.5 or 5 times a power of ten apart) from at or below ``lo`` to
    at or above ``hi``, at most ``at_most`` of them: axis labels a person reads at a
    glance (0, 2.5, 5, 7.5, 10), not the data's own extremes (0.976, 3.12, 5.27)."""
    if not hi > lo:
        lo, hi = lo - 1, hi + 1
    for k in range(math.floor(math.log10((hi - lo) / at_most)), 400):
        for m in (1.0, 2.0, 2.5, 5.0):
            step = m * 10.0**k
            first, last = math.floor(lo / step), math.ceil(hi / step)
            if last - first + 1 <= at_most:
                return [round(i * step, 12) for i in range(first, last + 1)]
    return [lo, hi]  # unreachable for finite bounds


def _fmt(t: datetime) -> str:
    return t.strftime("%m-%d %H:%M")


def svg(
    points: Sequence[RunPoint], *, marks: Marks, label: str,
    bounds: tuple[float, float] | None = None,
) -> Markup:  # fmt: skip
    """The chart as inline SVG markup; an empty-state message when no run has a statistic.
    ``bounds`` fixes the value axis for a statistic with a known range (a score's 0 to 1)."""
    drawn = [p for p in points if _finite(p.statistic)]
    head = (
        f'<svg class="run-chart" viewBox="0 0 {W} {H}" role="img" '
        f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">'
    )
    if not drawn:
        return Markup(
            head + f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle" fill="#555d70">'
            "No run with a statistic in this period</text></svg>"
        )
    times = [p.at for p in drawn]
    for t in (marks.onset, marks.opened, marks.closed):
        if t is not None:
            times.append(t)
    if marks.reference is not None:
        times += list(marks.reference)
    t0, t1 = min(times).timestamp(), max(times).timestamp()
    t1 = t1 if t1 > t0 else t0 + 1
    values = [v for p in drawn for v in (p.statistic, p.threshold) if v is not None and _finite(v)]
    pad = (max(values) - min(values)) * 0.02  # no point drawn on the frame's edge
    axis = ticks(*bounds) if bounds else ticks(min(values) - pad, max(values) + pad)
    lo, hi = axis[0], axis[-1]

    def x(t: datetime) -> float:
        return LEFT + (t.timestamp() - t0) / (t1 - t0) * (W - LEFT - RIGHT)

    def y(v: float) -> float:
        return TOP + (1 - (v - lo) / (hi - lo)) * (H - TOP - BOTTOM)

    parts = [head]
    bottom = H - BOTTOM
    if marks.reference is not None:
        a, b = (x(t) for t in marks.reference)
        parts.append(
            f'<rect class="reference" x="{a:.1f}" y="{TOP}" width="{max(b - a, 1):.1f}" '
            f'height="{bottom - TOP}" fill="#2b59c3" fill-opacity="0.08">'
            "<title>baseline reference window</title></rect>"
        )
    if marks.opened is not None:
        a = x(marks.opened)
        b = x(marks.closed) if marks.closed is not None else W - RIGHT
        parts.append(
            f'<rect class="open" x="{a:.1f}" y="{TOP}" width="{max(b - a, 2):.1f}" '
            f'height="{bottom - TOP}" fill="#c62f2f" fill-opacity="0.07">'
            "<title>alert open</title></rect>"
        )
    for v in axis:
        parts.append(
            f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e2e5ec"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11" '
            f'fill="#555d70">{v:g}</text>'
        )
    parts.append(
        f'<text x="{LEFT}" y="{H - 12}" font-size="11" fill="#555d70">'
        f"{_fmt(datetime.fromtimestamp(t0, tz=drawn[0].at.tzinfo))}</text>"
        f'<text x="{W - RIGHT}" y="{H - 12}" text-anchor="end" font-size="11" fill="#555d70">'
        f"{_fmt(datetime.fromtimestamp(t1, tz=drawn[0].at.tzinfo))} UTC</text>"
    )
    if marks.onset is not None:
        a = x(marks.onset)
        parts.append(
            f'<line class="onset" x1="{a:.1f}" x2="{a:.1f}" y1="{TOP}" y2="{bottom}" '
            'stroke="#b7791f" stroke-width="2"><title>degradation onset</title></line>'
            f'<text x="{a + 4:.1f}" y="{TOP + 12}" font-size="11" fill="#85560f">onset</text>'
        )
    thr = [(p.at, p.threshold) for p in drawn if _finite(p.threshold)]
    if thr:
        line = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in thr)  # type: ignore[arg-type]
        parts.append(
            f'<polyline class="threshold" points="{line}" fill="none" stroke="#c62f2f" '
            'stroke-dasharray="5 4" stroke-width="1.5"/>'
        )
    line = " ".join(f"{x(p.at):.1f},{y(p.statistic):.1f}" for p in drawn)  # type: ignore[arg-type]
    parts.append(
        f'<polyline class="statistic" points="{line}" fill="none" stroke="#2b59c3" '
        'stroke-width="2"/>'
    )
    for p in drawn:
        cls = "point fired" if p.fired else "point"
        fill = "#c62f2f" if p.fired else "#2b59c3"
        tip = f"{p.at:%Y-%m-%d %H:%M} UTC: {p.statistic:.4g}" + (" (fired)" if p.fired else "")
        parts.append(
            f'<circle class="{cls}" cx="{x(p.at):.1f}" cy="{y(p.statistic):.1f}" '  # type: ignore[arg-type]
            f'r="{5 if p.fired else 3}" fill="{fill}"><title>{escape(tip)}</title></circle>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def sparkline(points: Sequence[RunPoint], *, label: str) -> Markup:
    """A card's small chart: the statistic of the last runs, fired ones red, no axes."""
    drawn = [p for p in points if p.statistic is not None and _finite(p.statistic)]
    if len(drawn) < 2:
        return Markup("")
    w, h, pad = 160, 28, 3
    values = [v for p in drawn for v in (p.statistic, p.threshold) if v is not None and _finite(v)]
    lo, hi = min(values), max(values)
    hi = hi if hi > lo else lo + 1

    def xy(i: int, v: float) -> str:
        x = pad + i * (w - 2 * pad) / (len(drawn) - 1)
        return f"{x:.1f},{pad + (1 - (v - lo) / (hi - lo)) * (h - 2 * pad):.1f}"

    line = " ".join(xy(i, p.statistic) for i, p in enumerate(drawn))  # type: ignore[arg-type]
    parts = [
        f'<svg class="sparkline" viewBox="0 0 {w} {h}" role="img" aria-label="{escape(label)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<polyline points="{line}" fill="none" stroke="#2b59c3" stroke-width="1.5"/>',
    ]
    thr = [
        (i, p.threshold)
        for i, p in enumerate(drawn)
        if p.threshold is not None and _finite(p.threshold)
    ]
    if thr:
        t_line = " ".join(xy(i, v) for i, v in thr)  # type: ignore[arg-type]
        parts.append(
            f'<polyline class="threshold" points="{t_line}" fill="none" stroke="#c62f2f" '
            'stroke-dasharray="3 2" stroke-width="1"/>'
        )
    for i, p in enumerate(drawn):
        if p.fired:
            cx, cy = xy(i, p.statistic).split(",")  # type: ignore[arg-type]
            parts.append(f'<circle class="fired" cx="{cx}" cy="{cy}" r="2" fill="#c62f2f"/>')
    parts.append("</svg>")
    return Markup("".join(parts))
