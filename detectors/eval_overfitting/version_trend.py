"""FM-5 version trend: eval success rising across versions while production does not.

Linear-probability slopes of success on version rank (versions in first-seen order over both
windows), one per source; a one-sided z test that the eval slope exceeds the production one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from detectors.records import TraceRecord


def version_trend(
    agent: str,
    traces: Sequence[TraceRecord],
    *,
    min_traces: int,
    min_versions: int,
    min_gap: float,
) -> dict[str, Any] | None:
    """Eval vs production success slopes over an agent's versions (first-seen order)."""
    first_seen: dict[str, float] = {}
    outcomes: dict[tuple[str, str], list[float]] = defaultdict(list)
    for t in traces:
        first_seen[t.agent_version] = min(first_seen.get(t.agent_version, np.inf), t.started_at)
        if t.source in ("eval", "production"):
            outcomes[(t.agent_version, t.source)].append(float(t.success))
    versions = [
        v
        for v in sorted(first_seen, key=lambda v: (first_seen[v], v))
        if min(len(outcomes[(v, "eval")]), len(outcomes[(v, "production")])) >= min_traces
    ]
    if len(versions) < min_versions:
        return None
    slopes, rates = {}, {}
    for source in ("eval", "production"):
        x = np.concatenate([np.full(len(outcomes[(v, source)]), i) for i, v in enumerate(versions)])
        y = np.concatenate([outcomes[(v, source)] for v in versions])
        sxx = np.sum((x - x.mean()) ** 2)
        b = np.sum((x - x.mean()) * (y - y.mean())) / sxx
        resid = y - y.mean() - b * (x - x.mean())
        # floor the residual variance so an all-success source still has some uncertainty
        s2 = max(np.sum(resid**2) / (y.size - 2), 1.0 / y.size)
        slopes[source] = (float(b), float(s2 / sxx))
        rates[source] = [float(np.mean(outcomes[(v, source)])) for v in versions]
    (b_e, v_e), (b_p, v_p) = slopes["eval"], slopes["production"]
    span = len(versions) - 1
    divergence = (b_e - b_p) * span
    rho = {s: _spearman(rates[s]) for s in ("eval", "production")}
    pattern = bool(rho["eval"] > 0 >= rho["production"])
    return {
        "test": "trend",
        "agent": agent,
        "versions": versions,
        "eval_success_by_version": rates["eval"],
        "production_success_by_version": rates["production"],
        "spearman_eval": rho["eval"],
        "spearman_production": rho["production"],
        "eval_rising_production_flat_or_falling": pattern,
        "eval_rise": b_e * span,
        "production_change": b_p * span,
        "excess": float(divergence),
        "p_value": float(stats.norm.sf((b_e - b_p) / np.sqrt(v_e + v_p))),
        "effect_ok": bool(b_e * span >= min_gap and divergence >= min_gap),
        "summary": (
            f"{agent}: over versions {', '.join(versions)} eval success "
            f"{rates['eval'][0]:.3f} -> {rates['eval'][-1]:.3f} while production "
            f"{rates['production'][0]:.3f} -> {rates['production'][-1]:.3f}"
        ),
    }


def _spearman(rates: Sequence[float]) -> float:
    if np.ptp(rates) == 0:
        return 0.0
    return float(stats.spearmanr(np.arange(len(rates)), rates).statistic)
