"""FM-7 counterfactual sub-test: paired current-vs-baseline runs on the same inputs.

A current trace whose ``counterfactual_of`` names a trace (in either window) is the current
policy's run and the named one its baseline on the same input (e.g. a shadow replay on the
previous version). The pairs' differences (current - baseline) get one-sided Wilcoxon
signed-rank tests of proxy gain and true loss, Holm within each family.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from detectors.proxy_convergence.objectives import holm_by_family, intersection_union
from detectors.records import TraceRecord


def counterfactual_test(
    runs: Sequence[TraceRecord],
    by_id: dict[str, TraceRecord],
    proxies: Sequence[str],
    trues: Sequence[str],
    *,
    min_pairs: int,
    min_effect: float,
) -> dict[str, Any] | None:
    """Proxy gain and true loss on the pairs, or None without both kinds of objective."""
    pairs = [(t, by_id[t.counterfactual_of]) for t in runs if t.counterfactual_of in by_id]
    results: dict[str, dict[str, Any]] = {}
    for name in [*proxies, *trues]:
        got = [(a.score(name), b.score(name)) for a, b in pairs]
        both = np.array([(a.value, b.value) for a, b in got if a and b], float)
        both = both[np.isfinite(both).all(axis=1)] if len(both) else both
        if len(both) < min_pairs:
            continue
        diff = both[:, 0] - both[:, 1]
        sd = both[:, 1].std(ddof=1) or both.std(ddof=1)
        if np.count_nonzero(diff) < 5 or sd == 0:
            continue
        is_proxy = name in proxies
        p = stats.wilcoxon(diff, alternative="greater" if is_proxy else "less").pvalue
        results[name] = {
            "kind": "proxy" if is_proxy else "true",
            "n_pairs": int(len(diff)),
            "mean_difference": float(diff.mean()),
            "effect": float((diff.mean() if is_proxy else -diff.mean()) / sd),
            "p_value": float(p),
        }
    gained = [n for n in proxies if n in results]
    lost = [n for n in trues if n in results]
    if not gained or not lost:
        return None
    holm_by_family(results, gained, lost)
    gained = [n for n in gained if results[n]["effect"] >= min_effect]
    lost = [n for n in lost if results[n]["effect"] >= min_effect]
    return {
        "p_value": intersection_union(
            [results[n]["p_holm"] for n in gained], [results[n]["p_holm"] for n in lost]
        ),
        "n_pairs": len(pairs),
        "objectives": results,
        "proxies": gained,
        "true_objectives": lost,
    }
