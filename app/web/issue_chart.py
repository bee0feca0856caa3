"""An issue's events per hour as an SVG bar chart drawn on the server, with the first
event of each agent version marked (a deploy that brought the failure, or did not).

As :mod:`app.web.rule_chart`: presentation attributes only, so it reads without
JavaScript under the CSP, axis ticks from :func:`app.web.run_chart.ticks`, every text
escaped; each bar carries a ``<title>`` with its hour and counts.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from markupsafe import Markup, escape

from app.issues.schemas import HourCount, VersionCount
from app.web.run_chart import ticks

W, H, LEFT, RIGHT, TOP, BOTTOM = 900, 220, 48, 14, 14, 40
BAR, MARK = "#c62f2f", "#2b59c3"


def svg(hours: list[HourCount], versions: list[VersionCount], *, start: datetime,
        end: datetime, label: str) -> Markup:  # fmt: skip
    """Bars from ``start`` to ``end`` (hourly), version marks inside that span."""
    head = (f'<svg class="issue-chart" viewBox="0 0 {W} {H}" role="img" '
            f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">')  # fmt: skip
    if not hours:
        return Markup(head + f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle" fill="#555d70">'
                      "No events in this period</text></svg>")  # fmt: skip
    axis = ticks(0.0, float(max(h.events for h in hours)), at_most=5)
    top = axis[-1] or 1.0
    t0, t1 = start.timestamp(), max(end.timestamp(), start.timestamp() + 3600)
    width = (W - LEFT - RIGHT) * 3600 / (t1 - t0)

    def x(t: datetime) -> float:
        return LEFT + (t.timestamp() - t0) / (t1 - t0) * (W - LEFT - RIGHT)

    def y(v: float) -> float:
        return TOP + (1 - v / top) * (H - TOP - BOTTOM)

    parts = [head]
    for v in axis:
        parts.append(
            f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e2e5ec"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end" '
            f'font-size="11" fill="#555d70">{v:g}</text>'
        )
    for h in hours:
        tip = (f"{h.hour:%m-%d %H:00}–{h.hour + timedelta(hours=1):%H:00} UTC: "
               f"{h.events} events in {h.traces} traces")  # fmt: skip
        parts.append(
            f'<rect class="bar" x="{x(h.hour) + 0.5:.1f}" y="{y(h.events):.1f}" '
            f'width="{max(width - 1, 1):.1f}" height="{y(0) - y(h.events):.1f}" fill="{BAR}">'
            f"<title>{escape(tip)}</title></rect>"
        )
    for version in versions:
        if not start <= version.first_seen <= end:
            continue
        at, name = x(version.first_seen), escape(version.version or "(no version)")
        parts.append(
            f'<line class="version" x1="{at:.1f}" x2="{at:.1f}" y1="{TOP}" y2="{y(0):.1f}" '
            f'stroke="{MARK}" stroke-dasharray="4 3"><title>{name} '
            f"first failed {version.first_seen:%m-%d %H:%M} UTC</title></line>"
            # A label near the right edge reads leftwards, so it stays inside the chart.
            f'<text class="version-label" x="{at + 3 if at < W * 0.8 else at - 3:.1f}" '
            f'y="{TOP + 10}" font-size="11" fill="{MARK}" '
            f'text-anchor="{"start" if at < W * 0.8 else "end"}">{name}</text>'
        )
    parts.append(
        f'<text x="{LEFT}" y="{H - 12}" font-size="11" fill="#555d70">{start:%m-%d %H:%M}</text>'
        f'<text x="{W - RIGHT}" y="{H - 12}" text-anchor="end" font-size="11" fill="#555d70">'
        f"{end:%m-%d %H:%M} UTC</text></svg>"
    )
    return Markup("".join(parts))
