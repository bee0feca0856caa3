"""Each project's share of a scheduler tick: due monitors taken in rounds, a few per project.

A tick used to run every due monitor in order of its slot, so one project with 200 due
monitors ran them all before another project's one (and the next tick, which would have
found that project's next ones, waited behind them). Now a tick is a series of rounds;
each round reads what is due again and takes at most :data:`PROJECT_SHARE` monitors per
project, interleaved one per project at a time, projects that have run fewest this tick
first. Another project's monitor then waits for at most one round of the busy project's
runs, whether it was due when the tick began or became due during it; a project alone
still runs its whole backlog in the tick, a share per round.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import zip_longest

from app.scheduler.leader import DueMonitor

# A project's monitors per round: the ten defaults, so a project's default monitors run in
# one cycle and load their shared windows once (app/monitors/windows/cache.py).
PROJECT_SHARE = 10


def take_round(
    due: Sequence[DueMonitor], *, taken: Mapping[int, int], share: int = PROJECT_SHARE
) -> list[DueMonitor]:
    """The monitors one round runs, in order: ``due`` (most overdue first) cut to ``share``
    per project and interleaved, the projects with fewest runs ``taken`` this tick first.

    >>> due = [DueMonitor(i, 1, None, 60.0, 240.0) for i in range(4)]
    >>> due.append(DueMonitor(9, 2, None, 60.0, 240.0))
    >>> [d.monitor_id for d in take_round(due, taken={}, share=3)]
    [0, 9, 1, 2]
    >>> [d.monitor_id for d in take_round(due, taken={1: 3}, share=3)]
    [9, 0, 1, 2]
    """
    per_project: dict[int, list[DueMonitor]] = {}
    for monitor in due:
        per_project.setdefault(monitor.project_id, []).append(monitor)
    # Ties go to the project whose most overdue monitor comes first in ``due``.
    order = sorted(per_project, key=lambda p: taken.get(p, 0))
    turns = zip_longest(*(per_project[p][:share] for p in order))
    return [monitor for turn in turns for monitor in turn if monitor is not None]
