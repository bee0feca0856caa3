"""FM-7 objectives: which scores are proxies and which true, their shifts and decoupling.

A score name's kind is the kind most of its scores carry; a trace's value is its latest
score by name. A shift is a one-sided Mann-Whitney U test of current vs reference in the
harmful direction (proxy up, true objective down); decoupling is a fall of the Spearman
correlation between a proxy and a true objective.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from detectors.records import TraceRecord
from detectors.significance import holm_into

# Spearman's rho has a larger sampling variance than Pearson's r; Fieller, Hartley & Pearson
# (1957) give var(atanh(rho)) ~= 1.06 / (n - 3) for the Fisher z test of a difference.
SPEARMAN_VARIANCE = 1.06


def objective_kinds(traces: Sequence[TraceRecord]) -> dict[str, str]:
    """Score name -> ``proxy`` or ``true``, the kind most of its scores carry."""
    votes: dict[str, Counter[str]] = {}
    for t in traces:
        for s in t.scores:
            if s.kind in ("proxy", "true"):
                votes.setdefault(s.name, Counter())[s.kind] += 1
    return {name: c.most_common(1)[0][0] for name, c in votes.items()}


def objective_shift(
    name: str,
    kind: str,
    ref: Sequence[TraceRecord],
    cur: Sequence[TraceRecord],
    *,
    min_traces: int,
) -> dict[str, Any] | None:
    """One-sided Mann-Whitney U of current vs reference in the harmful direction."""
    x_ref, x_cur = _values(ref, name), _values(cur, name)
    if min(x_ref.size, x_cur.size) < min_traces:
        return None
    sd = np.sqrt((x_ref.var(ddof=1) + x_cur.var(ddof=1)) / 2.0)
    if sd == 0:
        return None  # constant scores carry no evidence
    direction = "greater" if kind == "proxy" else "less"
    p = stats.mannwhitneyu(x_cur, x_ref, alternative=direction).pvalue
    change = float(x_cur.mean() - x_ref.mean())
    return {
        "kind": kind,
        "reference_mean": float(x_ref.mean()),
        "current_mean": float(x_cur.mean()),
        "change": change,
        "effect": float((change if kind == "proxy" else -change) / sd),
        "p_value": float(p),
        "n_reference": int(x_ref.size),
        "n_current": int(x_cur.size),
    }


def holm_by_family(results: dict[str, dict[str, Any]], *families: Sequence[str]) -> None:
    """Holm-adjust ``results`` within each family of names (those present), in place."""
    for family in families:
        holm_into([results[n] for n in family if n in results])


def rank_correlations(
    proxies: Sequence[str],
    trues: Sequence[str],
    ref: Sequence[TraceRecord],
    cur: Sequence[TraceRecord],
    *,
    min_traces: int,
) -> list[dict[str, Any]]:
    """Per (proxy, true) pair: Spearman rho in both windows, one-sided z test that it fell."""
    rows: list[dict[str, Any]] = []
    for p in proxies:
        for q in trues:
            rho = [_spearman(window, p, q) for window in (ref, cur)]
            if any(r is None or r[1] < min_traces for r in rho):
                continue
            (r_ref, n_ref), (r_cur, n_cur) = rho  # type: ignore[misc]
            se = np.sqrt(SPEARMAN_VARIANCE * (1 / (n_ref - 3) + 1 / (n_cur - 3)))
            z = (
                np.arctanh(np.clip(r_ref, -0.999, 0.999))
                - np.arctanh(np.clip(r_cur, -0.999, 0.999))
            ) / se
            rows.append(
                {
                    "proxy": p,
                    "true": q,
                    "rho_reference": float(r_ref),
                    "rho_current": float(r_cur),
                    "p_value": float(stats.norm.sf(z)),
                }
            )
    holm_into(rows)
    return rows


def decoupling_test(
    correlations: list[dict[str, Any]],
    shifts: dict[str, Any],
    rose: list[str],
    *,
    min_correlation_drop: float,
) -> dict[str, Any]:
    """A proxy that rose whose correlation with a true objective fell: IUT of both parts."""
    candidates = [
        (max(row["p_holm"], shifts[row["proxy"]]["p_holm"]), row["proxy"], row["true"])
        for row in correlations
        if row["proxy"] in rose
        and row["rho_reference"] - row["rho_current"] >= min_correlation_drop
    ]
    best = min(candidates, default=(1.0, None, None))
    return {"p_value": float(best[0]), "proxy": best[1], "true": best[2]}


def intersection_union(first: Sequence[float], second: Sequence[float]) -> float:
    """Intersection-union p-value: both families must have a rejection."""
    if not first or not second:
        return 1.0
    return float(max(min(first), min(second)))


def _values(traces: Sequence[TraceRecord], name: str) -> np.ndarray:
    found = (t.score(name) for t in traces)
    values = np.array([s.value for s in found if s is not None], float)
    return values[np.isfinite(values)]


def _spearman(traces: Sequence[TraceRecord], p: str, q: str) -> tuple[float, int] | None:
    both = np.array(
        [(a.value, b.value) for a, b in ((t.score(p), t.score(q)) for t in traces) if a and b],
        float,
    )
    both = both[np.isfinite(both).all(axis=1)] if len(both) else both
    if len(both) < 4 or np.ptp(both[:, 0]) == 0 or np.ptp(both[:, 1]) == 0:
        return None
    return float(stats.spearmanr(both[:, 0], both[:, 1]).statistic), len(both)
