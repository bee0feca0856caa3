"""FM-7 diversity sub-test: the decisions collapse onto what the proxy rewards.

Normalised Shannon entropy :math:`H/\\log K` of the ``decision`` categories, compared
between the windows by an exact permutation test.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from detectors.records import TraceRecord


def normalised_entropy(counts: np.ndarray) -> np.ndarray:
    """Shannon entropy of category counts (last axis) divided by log(number of categories).

    >>> float(normalised_entropy(np.array([5, 5]))), bool(normalised_entropy(np.array([9, 1])) < 0.5)
    (1.0, True)
    """
    counts = np.asarray(counts, float)
    prob = counts / counts.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(prob > 0, prob * np.log(prob), 0.0)
    return -terms.sum(axis=-1) / np.log(counts.shape[-1])


def diversity_test(
    ref: Sequence[TraceRecord],
    cur: Sequence[TraceRecord],
    *,
    min_traces: int,
    min_entropy_drop: float,
    n_permutations: int,
    seed: int,
) -> dict[str, Any] | None:
    """One-sided test of :math:`H_{ref} - H_{cur}`; p is 1 unless the drop reaches the gate."""
    d_ref = [t.decision for t in ref if t.decision is not None]
    d_cur = [t.decision for t in cur if t.decision is not None]
    categories = sorted(set(d_ref) | set(d_cur))
    if min(len(d_ref), len(d_cur)) < min_traces or len(categories) < 2:
        return None
    c_ref = np.array([Counter(d_ref)[c] for c in categories])
    c_cur = np.array([Counter(d_cur)[c] for c in categories])
    h_ref, h_cur = normalised_entropy(c_ref), normalised_entropy(c_cur)
    # Under exchangeability the current window's counts are a multivariate hypergeometric
    # draw from the pooled counts: an exact permutation test without permuting.
    rng = np.random.default_rng(seed)
    pooled = c_ref + c_cur
    perm_cur = rng.multivariate_hypergeometric(pooled, len(d_cur), size=n_permutations)
    null = normalised_entropy(pooled - perm_cur) - normalised_entropy(perm_cur)
    p = (1 + np.sum(null >= h_ref - h_cur - 1e-12)) / (n_permutations + 1)
    drop = float(h_ref - h_cur)
    top = Counter(d_cur).most_common(1)[0]
    return {
        "p_value": float(p) if drop >= min_entropy_drop else 1.0,
        "p_permutation": float(p),
        "entropy_reference": float(h_ref),
        "entropy_current": float(h_cur),
        "entropy_drop": drop,
        "n_categories": len(categories),
        "top_decision_current": {"decision": top[0], "share": top[1] / len(d_cur)},
    }
