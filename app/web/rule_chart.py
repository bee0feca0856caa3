"""A rule's preview as an SVG drawn on the server: its value per step, its levels, and
the episodes it would have opened.

As :mod:`app.web.run_chart` (whose axis ticks it reuses): presentation attributes only, so
it reads without JavaScript under the CSP; every text escaped. The busiest groups are drawn
(:data:`MAX_LINES`, the ones that would have alerted first), each in its own colour with a
legend; the warning and critical levels are dashed lines (a calibrated rule's reference is dotted and the value at which its
test fires dashed, per step); each would-be episode is a band
from its opening to its resolution (to the end while still open), amber for warning and red
for critical, titled with its times.
"""

from __future__ import annotations

import math
from datetime import datetime

from markupsafe import Markup, escape

from app.rules.schemas import PreviewGroup, PreviewOut
from app.web.run_chart import ticks

W, H, LEFT, RIGHT, TOP, BOTTOM = 900, 280, 64, 14, 14, 40
MAX_LINES = 6
COLOURS = ("#2b59c3", "#2f855a", "#805ad5", "#b7791f", "#319795", "#d53f8c")
_BAND = {"warning": "#d69e2e", "critical": "#c62f2f"}


def _name(labels: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in labels.items()) or "all traffic"


def drawn_groups(p: PreviewOut) -> list[PreviewGroup]:
    """The groups a chart draws: those with episodes first, then the rest, at most
    :data:`MAX_LINES`."""
    alerting = {tuple(sorted(e.group.items())) for e in p.episodes}
    ranked = sorted(p.groups, key=lambda g: tuple(sorted(g.labels.items())) not in alerting)
    return ranked[:MAX_LINES]


def svg(p: PreviewOut, *, label: str) -> Markup:
    groups = drawn_groups(p)
    head = (f'<svg class="rule-chart" viewBox="0 0 {W} {H}" role="img" '
            f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">')  # fmt: skip
    values = [pt.value for g in groups for pt in g.points if pt.value is not None]
    values += [v for v in (p.warning, p.critical) if v is not None]
    values += [v for g in groups for pt in g.points for v in (pt.baseline, pt.bound)
               if v is not None and math.isfinite(v)]  # fmt: skip
    if not any(pt.value is not None for g in groups for pt in g.points):
        return Markup(head + f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle" fill="#555d70">'
                      "No traffic matches this rule in the period</text></svg>")  # fmt: skip
    lo_v, hi_v = min(values), max(values)
    pad = (hi_v - lo_v) * 0.04 or abs(hi_v) * 0.1 or 1.0
    axis = ticks(min(0.0, lo_v) if lo_v >= 0 else lo_v - pad, hi_v + pad)
    lo, hi = axis[0], axis[-1]
    t0, t1 = p.start.timestamp(), p.end.timestamp()
    t1 = t1 if t1 > t0 else t0 + 1

    def x(t: datetime) -> float:
        return LEFT + (t.timestamp() - t0) / (t1 - t0) * (W - LEFT - RIGHT)

    def y(v: float) -> float:
        return TOP + (1 - (v - lo) / (hi - lo)) * (H - TOP - BOTTOM)

    bottom = H - BOTTOM
    parts = [head]
    for e in p.episodes:
        if tuple(sorted(e.group.items())) not in {tuple(sorted(g.labels.items())) for g in groups}:
            continue
        a = x(e.opened_at)
        b = x(e.resolved_at) if e.resolved_at is not None else W - RIGHT
        until = f"{e.resolved_at:%m-%d %H:%M}" if e.resolved_at else "still open"
        tip = f"{e.severity} alert ({_name(e.group)}): {e.opened_at:%m-%d %H:%M} to {until}"
        parts.append(
            f'<rect class="episode {e.severity}" x="{a:.1f}" y="{TOP}" width="{max(b - a, 2):.1f}" '
            f'height="{bottom - TOP}" fill="{_BAND[e.severity]}" fill-opacity="0.14">'
            f"<title>{escape(tip)}</title></rect>"
        )
    for v in axis:
        parts.append(
            f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e2e5ec"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11" '
            f'fill="#555d70">{v:g}</text>'
        )
    parts.append(
        f'<text x="{LEFT}" y="{H - 12}" font-size="11" fill="#555d70">{p.start:%m-%d %H:%M}</text>'
        f'<text x="{W - RIGHT}" y="{H - 12}" text-anchor="end" font-size="11" fill="#555d70">'
        f"{p.end:%m-%d %H:%M} UTC</text>"
    )
    for level, bound in (("warning", p.warning), ("critical", p.critical)):
        if bound is None or not math.isfinite(bound):
            continue
        parts.append(
            f'<line class="level {level}" x1="{LEFT}" x2="{W - RIGHT}" y1="{y(bound):.1f}" '
            f'y2="{y(bound):.1f}" stroke="{_BAND[level]}" stroke-dasharray="6 4" stroke-width="1.5">'
            f"<title>{level} level {bound:g}</title></line>"
        )
    for i, g in enumerate(groups):
        colour = COLOURS[i % len(COLOURS)]
        # A calibrated rule: the reference's value (dotted) and where the test fires (dashed).
        for attr, dash, stroke, title in (
            ("baseline", "2 3", colour, "reference"),
            ("bound", "6 4", _BAND["critical"], "fires beyond"),
        ):
            pts = [
                (pt.at, getattr(pt, attr))
                for pt in g.points
                if getattr(pt, attr) is not None and math.isfinite(getattr(pt, attr))
            ]
            if len(pts) > 1:
                line = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in pts)
                parts.append(f'<polyline class="{attr}" points="{line}" fill="none" stroke="{stroke}" '
                             f'stroke-dasharray="{dash}" stroke-width="1.2"><title>{title} '
                             f"({escape(_name(g.labels))})</title></polyline>")  # fmt: skip
        for segment in _segments(g):
            line = " ".join(f"{x(pt.at):.1f},{y(pt.value):.1f}" for pt in segment)  # type: ignore[arg-type]
            parts.append(f'<polyline class="series" points="{line}" fill="none" '
                         f'stroke="{colour}" stroke-width="1.6"><title>{escape(_name(g.labels))}</title></polyline>')  # fmt: skip
    parts.append("</svg>")
    return Markup("".join(parts))


def _segments(g: PreviewGroup) -> list[list]:  # type: ignore[type-arg]
    """The group's points split where a step had no data (no line is drawn across)."""
    out: list[list] = [[]]  # type: ignore[type-arg]
    for pt in g.points:
        if pt.value is None or not math.isfinite(pt.value):
            if out[-1]:
                out.append([])
        else:
            out[-1].append(pt)
    return [s for s in out if s]


def legend(p: PreviewOut) -> list[tuple[str, str]]:
    """``(colour, group name)`` of each drawn line."""
    return [(COLOURS[i % len(COLOURS)], _name(g.labels)) for i, g in enumerate(drawn_groups(p))]
