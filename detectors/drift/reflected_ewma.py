"""One-sided EWMA chart with a reflecting barrier at 0, and its ARL-calibrated limit.

z_t = max(0, λ max(x_t, floor) + (1 − λ) z_{t−1}),  z_0 = 0, signal when
z_t > L sqrt(λ/(2−λ) (1 − (1−λ)^{2t})), for x_t standard normal in control.

Why reflect: a chart that watches for *increases* only and lets z wander below 0 keeps
the memory of every low observation; after a quiet stretch an increase must first climb
back from there (the EWMA's "inertia", Woodall & Mahmoud 2005). A test whose p-value is
often 1 (a discrete or conservative test: Fisher's exact test on few failures) feeds the
chart many low x, so the plain chart sits well below 0 before any change. The barrier
forgets them: the one-sided EWMA of Crowder & Hamilton (1992) and Gan (1993). Its in-control
run length differs from the two-sided chart's, so the limit here is computed for the
reflected chart itself.

The ARL comes from the Brook & Evans (1972) Markov chain: an atom at exactly 0 (where the
barrier puts the chart) plus ``n_states`` cells over (0, h]. With ``floor`` the observation
is ``max(x, floor)``, as :mod:`app.monitors.decision.sequential` clips it; the chain carries the
clip exactly (the mass below the floor lands at λ·floor + (1 − λ)·z).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from detectors.drift.ewma import chain_arl


def reflected_ewma_arl0(
    lam: float,
    L: float,
    *,
    floor: float = -math.inf,
    time_varying: bool = True,
    n_states: int = 200,
) -> float:
    """In-control ARL of the reflected one-sided chart (see the module's notes).

    >>> round(reflected_ewma_arl0(1.0, 3.0), 0)  # λ = 1 is the one-sided Shewhart chart
    741.0
    """
    if not 0.0 < lam <= 1.0:
        raise ValueError(f"lam must lie in (0, 1]; got {lam}")
    if not L > 0.0:
        raise ValueError(f"L must be positive; got {L}")
    if n_states < 10:
        raise ValueError("n_states must be >= 10")
    h = L * math.sqrt(lam / (2.0 - lam))
    edges = np.linspace(0.0, h, n_states + 1)
    # State 0 is the atom at z = 0; states 1..n are the cells' centres.
    values = np.concatenate([[0.0], 0.5 * (edges[:-1] + edges[1:])])
    carried = (1.0 - lam) * values[:, None]
    lowest = lam * floor + carried  # the smallest value the next z can take (before 0)

    def cdf(b: np.ndarray) -> np.ndarray:
        """P(λ max(x, floor) + (1 − λ) z ≤ b) from each state (rows) for each bound."""
        p = special.ndtr((b[None, :] - carried) / lam)
        return np.where(b[None, :] >= lowest, p, 0.0)

    def cells(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return np.clip(cdf(hi) - cdf(lo), 0.0, None)

    steady = np.concatenate([cdf(np.array([0.0])), cells(edges[:-1], edges[1:])], axis=1)

    def transition(limit: float) -> np.ndarray:
        # Only the cells a narrower limit cuts differ from the steady chain: zero those
        # above it, recompute the one it falls in (column 0 is the atom).
        p = steady.copy()
        p[:, 1:][:, edges[:-1] >= limit] = 0.0
        cut = np.flatnonzero((edges[:-1] < limit) & (edges[1:] > limit))
        p[:, 1 + cut] = cells(edges[:-1][cut], np.full(cut.size, limit))
        return p

    start = np.zeros(n_states + 1)
    start[0] = 1.0  # the chart starts at the barrier
    return chain_arl(start, steady, transition, h=h, lam=lam, time_varying=time_varying)


def reflected_ewma_limit_for_arl0(
    arl0: float, lam: float, *, floor: float = -math.inf, time_varying: bool = True
) -> float:
    """The limit width L giving the reflected chart an in-control ARL of ``arl0``.

    >>> round(reflected_ewma_limit_for_arl0(741.0, 1.0), 2)
    3.0
    """
    if not arl0 > 1.0:
        raise ValueError(f"arl0 must exceed 1; got {arl0}")

    def gap(L: float) -> float:
        arl = reflected_ewma_arl0(lam, L, floor=floor, time_varying=time_varying)
        return math.log(arl / arl0)

    return float(optimize.brentq(gap, 0.2, 8.0, xtol=1e-6))
