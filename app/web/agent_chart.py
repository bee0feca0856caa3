"""An agent's measures over a range as SVG drawn on the server (the agent page's charts).

As :mod:`app.web.run_chart` (whose round-number ticks it reuses): presentation attributes
only, so a chart reads with JavaScript off and under the CSP, and every text is escaped
(agent, tool and objective names come from telemetry). One chart per measure family: bars
for a count (traces per hour, cost per day), lines for rates and latencies, a gap where a
step had no data (no line is drawn across an hour without traffic). Each step's value is in
a ``<title>``, so a pointer or a screen reader gets the number.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from markupsafe import Markup, escape

from app.web.run_chart import ticks

W, H, LEFT, RIGHT, TOP, BOTTOM = 600, 200, 62, 12, 12, 34
COLOURS = ("#2b59c3", "#c62f2f", "#2f855a", "#805ad5")


@dataclass(frozen=True)
class Line:
    name: str
    values: Sequence[float | None]
    bars: bool = False


def fmt(unit: str) -> Callable[[float], str]:
    """How a value of ``unit`` is written on an axis or in a tooltip.

    >>> fmt("rate")(0.125), fmt("ms")(1500.0), fmt("ms")(80.0), fmt("usd")(0.0042)
    ('12.5%', '1.5 s', '80 ms', '$0.0042')
    """
    return {
        "rate": lambda v: f"{v * 100:.3g}%",
        "ms": lambda v: f"{v / 1000:.3g} s" if abs(v) >= 1000 else f"{v:.3g} ms",
        "usd": lambda v: f"${v:.2g}" if abs(v) < 1 else f"${v:,.2f}",
        "count": lambda v: f"{v:,.0f}" if abs(v) >= 10 else f"{v:.2g}",
    }.get(unit, lambda v: f"{v:.3g}")


def svg(times: Sequence[datetime], lines: Sequence[Line], *, label: str, unit: str,
        step_seconds: int) -> Markup:  # fmt: skip
    """The chart of ``lines`` over the steps starting at ``times`` (each ``step_seconds``)."""
    head = (f'<svg class="agent-chart" viewBox="0 0 {W} {H}" role="img" '
            f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">')  # fmt: skip
    # A bar of zero is no traffic; a rate of zero is a value (no loops is worth a line).
    values = [v for line in lines for v in line.values if v is not None and (v or not line.bars)]
    if not times or not values:
        return Markup(head + f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle" fill="#555d70">'
                      "No traffic in this range</text></svg>")  # fmt: skip
    write = fmt(unit)
    top = max(values) * 1.04 or 1.0
    if unit == "rate":
        top = min(top, 1.0)  # a share never passes 100 %
    axis = ticks(min(0.0, min(values)), top, at_most=5)
    lo, hi = axis[0], axis[-1]
    t0 = times[0].timestamp()
    t1 = times[-1].timestamp() + step_seconds
    slot = (W - LEFT - RIGHT) / max(len(times), 1)

    def x(i: int) -> float:
        return LEFT + (i + 0.5) * slot

    def y(v: float) -> float:
        return TOP + (1 - (v - lo) / (hi - lo)) * (H - TOP - BOTTOM)

    parts = [head]
    for v in axis:
        parts.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e2e5ec"/>'
                     f'<text class="tick" x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end" '
                     f'font-size="12" fill="#555d70">{escape(write(v))}</text>')  # fmt: skip
    parts.append(
        f'<text x="{LEFT}" y="{H - 10}" font-size="12" fill="#555d70">'
        f"{datetime.fromtimestamp(t0, tz=times[0].tzinfo):%m-%d %H:%M}</text>"
        f'<text x="{W - RIGHT}" y="{H - 10}" text-anchor="end" font-size="12" fill="#555d70">'
        f"{datetime.fromtimestamp(t1, tz=times[0].tzinfo):%m-%d %H:%M} UTC</text>"
    )
    for k, line in enumerate(lines):
        colour = COLOURS[k % len(COLOURS)]
        name = escape(line.name)
        if line.bars:
            for i, b in enumerate(line.values):
                if b:
                    top = y(b)
                    parts.append(f'<rect class="bar" x="{x(i) - slot * 0.4:.1f}" y="{top:.1f}" '
                                 f'width="{max(slot * 0.8, 1):.1f}" height="{y(lo) - top:.1f}" fill="{colour}" '
                                 f'fill-opacity="0.75"><title>{times[i]:%m-%d %H:%M}: {name} '
                                 f"{escape(write(b))}</title></rect>")  # fmt: skip
            continue
        run: list[str] = []
        for i, val in enumerate([*line.values, None]):
            if val is not None:
                run.append(f"{x(i):.1f},{y(val):.1f}")
                parts.append(f'<circle class="point" cx="{x(i):.1f}" cy="{y(val):.1f}" r="2.2" '
                             f'fill="{colour}"><title>{times[i]:%m-%d %H:%M}: {name} '
                             f"{escape(write(val))}</title></circle>")  # fmt: skip
            elif run:
                parts.append(f'<polyline class="series" points="{" ".join(run)}" fill="none" '
                             f'stroke="{colour}" stroke-width="1.8"><title>{name}</title></polyline>')  # fmt: skip
                run = []
    parts.append("</svg>")
    return Markup("".join(parts))


def legend(lines: Sequence[Line]) -> list[tuple[str, str]]:
    """``(colour, name)`` of each line, for the HTML legend under a chart."""
    return [(COLOURS[k % len(COLOURS)], line.name) for k, line in enumerate(lines)]
