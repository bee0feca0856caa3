"""The alert episodes a rule's evaluations open and resolve, as the alert lifecycle does.

The service's lifecycle (``app/alerts/lifecycle.py``): a fired evaluation opens an alert
or refreshes the open one (its severity follows the latest fired level); an evaluation
that does not fire counts towards resolution, and ``auto_resolve_after`` of them in a row
resolve it; a fired one in between starts the count again, and so does one still at its
level but not held for its ``for`` again (pending after a dip). A preview replays this over
the history so that what it shows is what the saved rule would have sent.

>>> fired = np.array([0, 1, 2, 0, 0, 0, 1, 0])
>>> eps = episodes(np.arange(8) * 300, fired, fired, np.arange(8.0), auto_resolve_after=3)
>>> [(e.opened_at, e.resolved_at, e.severity, e.peak_level) for e in eps]
[(300, 1500, 'critical', 2), (1800, None, 'warning', 1)]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from detectors.rules.static import SEVERITY


@dataclass(frozen=True)
class Episode:
    """One alert: opened at a fired evaluation, resolved after enough clean ones (None:
    still open at the end). ``severity``: the worst level it fired at (the live alert's
    severity follows its latest fired run, and so it was this at its worst);
    ``peak_value``: the worst value over the episode."""

    opened_at: int
    resolved_at: int | None
    severity: str
    peak_level: int
    peak_value: float
    fired_evaluations: int


def episodes(
    times: np.ndarray,
    fired: np.ndarray,
    levels: np.ndarray,
    values: np.ndarray,
    *,
    auto_resolve_after: int,
    worse: str = "above",
) -> list[Episode]:
    """The episodes of one group's evaluations (``fired``: the held level; ``levels``: the
    level at each, a step is clean when it is 0);
    ``worse``: which way a value is further from clean, ``above``, ``below`` or ``both``
    (farther from zero), for each episode's peak."""
    out: list[Episode] = []
    hits = np.flatnonzero(fired > 0)
    if hits.size == 0:
        return out
    i, n = int(hits[0]), fired.size
    while i < n:
        opened, peak, count, clean = i, 0, 0, 0
        worst = float("nan")
        resolved: int | None = None
        while i < n:
            level = int(fired[i])
            if level > 0:
                count, clean = count + 1, 0
                peak = max(peak, level)
                v = float(values[i])
                worst = v if np.isnan(worst) else _worse(worst, v, worse)
            elif levels[i] > 0:  # at its level, not held again yet: not clean
                clean = 0
            else:
                clean += 1
                if clean >= auto_resolve_after:
                    resolved = int(times[i])
                    break
            i += 1
        out.append(Episode(int(times[opened]), resolved, SEVERITY[peak], peak, worst, count))
        later = hits[hits > i]
        if resolved is None or later.size == 0:
            break
        i = int(later[0])
    return out


def _worse(a: float, b: float, worse: str) -> float:
    if worse == "above":
        return max(a, b)
    if worse == "below":
        return min(a, b)
    return a if abs(a) >= abs(b) else b
