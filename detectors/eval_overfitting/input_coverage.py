"""FM-5 input coverage: production inputs the eval set does not cover.

Per agent, current production inputs vs the de-duplicated eval inputs of both windows
(unit-normalised ``input_embedding``): the share of production inputs whose nearest eval
input is farther than the eval set's leave-one-out radius, and a classifier two-sample test.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.neighbors import NearestNeighbors

from detectors.records import TraceRecord


def input_coverage(
    agent: str,
    ref: Sequence[TraceRecord],
    cur: Sequence[TraceRecord],
    *,
    min_traces: int,
    min_outside: float,
    min_auc: float,
    coverage_quantile: float,
    n_folds: int,
    max_samples: int,
    seed: int,
) -> dict[str, Any] | None:
    """Production inputs outside the eval set's radius, and an eval-vs-production AUC."""
    rng = np.random.default_rng(seed)
    evals = _unique_inputs([t for t in (*ref, *cur) if t.source == "eval"])
    prods = _unique_inputs([t for t in cur if t.source == "production"])
    prods_ref = _unique_inputs([t for t in ref if t.source == "production"])
    if min(len(evals), len(prods)) < max(min_traces, 2 * n_folds):
        return None
    if len({v.shape for v in evals + prods + prods_ref}) != 1:
        return None
    e, p = (_subsample(np.stack(v), max_samples, rng) for v in (evals, prods))
    # eval-to-eval leave-one-out radius vs production-to-eval distance (unit vectors)
    index = NearestNeighbors(n_neighbors=2).fit(e)
    loo = np.sort(index.kneighbors(e)[0][:, 1])
    d_prod = index.kneighbors(p, n_neighbors=1)[0][:, 0]
    radius = loo[int(np.ceil(coverage_quantile * loo.size)) - 1]
    outside = int(np.sum(d_prod > radius))
    frac = outside / d_prod.size
    frac_ref = None
    if len(prods_ref) >= min_traces:
        # a lasting eval/production mismatch is known; only newly uncovered traffic counts
        pr = _subsample(np.stack(prods_ref), max_samples, rng)
        out_ref = int(np.sum(index.kneighbors(pr, n_neighbors=1)[0][:, 0] > radius))
        frac_ref = out_ref / len(pr)
        table = [[outside, d_prod.size - outside], [out_ref, len(pr) - out_ref]]
        p_knn = float(stats.fisher_exact(table, alternative="greater").pvalue)
        knn_ok = frac - frac_ref >= min_outside
    else:
        # exchangeable eval and production distances: the number of production points
        # above the eval order statistic is negative-hypergeometric
        above = int(np.sum(loo > radius))
        n_all = loo.size + d_prod.size
        p_knn = float(stats.nhypergeom.sf(outside - 1, n_all, d_prod.size, above + 1))
        knn_ok = frac >= min_outside
    auc, p_auc = classifier_auc(e, p, n_folds=n_folds, seed=seed)
    if frac_ref is not None:
        # the AUC measures a level of mismatch, not a change: supporting evidence only
        p_value, effect_ok = p_knn, knn_ok
    else:
        auc_ok = auc >= min_auc
        p_value = min(1.0, 2 * min(p_knn if knn_ok else 1.0, p_auc if auc_ok else 1.0))
        effect_ok = bool(knn_ok or auc_ok)
    return {
        "test": "coverage",
        "agent": agent,
        "n_eval_inputs": int(e.shape[0]),
        "n_production_inputs": int(p.shape[0]),
        "eval_radius": float(radius),
        "outside_fraction": float(frac),
        "reference_outside_fraction": frac_ref,
        "expected_outside_fraction": float(1.0 - coverage_quantile),
        "excess": float(frac - frac_ref if frac_ref is not None else frac),
        "p_knn": p_knn,
        "classifier_auc": auc,
        "p_auc": p_auc,
        "p_value": float(p_value),
        "effect_ok": effect_ok,
        "summary": (
            f"{agent}: {frac:.0%} of production inputs outside the eval set's "
            f"{coverage_quantile:.0%} radius"
            + (f" (reference window {frac_ref:.0%})" if frac_ref is not None else "")
            + f"; eval-vs-production classifier AUC {auc:.2f}"
        ),
    }


def classifier_auc(e: np.ndarray, p: np.ndarray, *, n_folds: int, seed: int) -> tuple[float, float]:
    """Cross-validated AUC of a logistic classifier telling production from eval inputs,
    with a one-sided Mann-Whitney p-value on the out-of-fold scores (AUC ~ 0.5: they match)."""
    x = np.vstack([e, p])
    y = np.r_[np.zeros(len(e)), np.ones(len(p))]
    folds = StratifiedKFold(n_folds, shuffle=True, random_state=seed)
    # Newton-Cholesky: a handful of iterations when samples far outnumber dimensions
    model = LogisticRegression(class_weight="balanced", solver="newton-cholesky", max_iter=200)
    # a not-quite-converged fit is still scored honestly on held-out folds
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        scores = cross_val_predict(model, x, y, cv=folds, method="decision_function")
    u = stats.mannwhitneyu(scores[y == 1], scores[y == 0], alternative="greater")
    return float(u.statistic / (len(e) * len(p))), float(u.pvalue)


def _unique_inputs(traces: Sequence[TraceRecord]) -> list[np.ndarray]:
    """Unit-normalised input embeddings, one per input (``input_hash``, else the vector)."""
    seen: dict[Any, np.ndarray] = {}
    for t in traces:
        if t.input_embedding is None:
            continue
        v = np.asarray(t.input_embedding, float).ravel()
        key = t.input_hash if t.input_hash is not None else v.tobytes()
        if key not in seen and np.all(np.isfinite(v)):
            norm = np.linalg.norm(v)
            seen[key] = v / norm if norm > 0 else v
    return list(seen.values())


def _subsample(x: np.ndarray, limit: int, rng: np.random.Generator) -> np.ndarray:
    return x if len(x) <= limit else x[rng.choice(len(x), limit, replace=False)]
