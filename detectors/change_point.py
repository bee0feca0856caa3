"""When a change began inside a window: the least-squares step estimate against a known level.

An alert that says "since" the start of its window is hours early when the window is long
(OUTCOME reads 8 hours: a tool outage at 06:00 read "since 22:15" the evening before). The
window's observations, in time order, are modelled as the reference level ``before`` up to
an unknown index ``k`` and one new level after it; the least-squares (Gaussian likelihood)
estimate of ``k`` maximises

    G(k) = n_k · (m_k − before)²,   m_k = mean(x[k:]),  n_k = len(x) − k,

over the ``k`` whose new level lies on the side that got worse (``direction``). This is
the CUSUM change-point estimator with the pre-change mean known (Hinkley, 1971, "Inference
about the change-point from cumulative sum tests", Biometrika 58); for 0/1 outcomes it is
the Bernoulli step's least-squares fit, close to its likelihood fit for rates away from 0 and 1.
It estimates where a step is, not whether there is one: call it for a change a test found.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> t = np.arange(480.0) * 60.0                      # 8 h, one trace a minute
>>> failed = np.where(t < 6 * 3600, rng.random(480) < 0.05, rng.random(480) < 0.6)
>>> round(step_onset(t, failed.astype(float), before=0.05, direction=1.0) / 3600, 2)
6.0
"""

from __future__ import annotations

import numpy as np


def step_onset(
    times: np.ndarray, values: np.ndarray, *, before: float, direction: float, min_after: int = 5
) -> float | None:
    """The time of the first observation after the estimated step (None: fewer than
    ``2 · min_after`` observations, or no split where the level moved in ``direction``).

    ``direction``: +1 when the change raised the values (an error rate), -1 when it lowered
    them (a success rate). ``min_after``: the fewest observations the new level is fitted to.
    """
    t = np.asarray(times, dtype=float)
    x = np.asarray(values, dtype=float)
    keep = np.isfinite(t) & np.isfinite(x)
    t, x = t[keep], x[keep]
    if t.size < 2 * min_after:
        return None
    order = np.argsort(t, kind="stable")
    t, x = t[order], x[order]
    tail_sums = np.cumsum(x[::-1])[::-1]  # sum of x[k:]
    n_after = np.arange(x.size, 0, -1, dtype=float)
    moved = tail_sums / n_after - before
    gain = n_after * moved**2
    gain[np.sign(moved) != np.sign(direction)] = -np.inf
    gain[x.size - min_after + 1 :] = -np.inf  # too few observations after the split
    k = int(np.argmax(gain))
    if not np.isfinite(gain[k]):
        return None
    return float(t[k])
