"""FM-7 proxy goal convergence: proxies improve while the true objectives degrade.

Goodhart's law in production: an agent tuned on a proxy (thumbs-up, CSAT, tokens saved)
keeps raising it while the outcome it stood for (resolution, correctness) quietly falls,
the proxy stops tracking the outcome, and the outputs collapse onto what the proxy rewards.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from detectors.records import DetectorResult, TraceRecord
from detectors.significance import check_integers_at_least, holm, holm_verdict

FAILURE_MODE = "FM-7"
# Spearman's rho has a larger sampling variance than Pearson's r; Fieller, Hartley & Pearson
# (1957) give var(atanh(rho)) ~= 1.06 / (n - 3) for the Fisher z test of a difference.
SPEARMAN_VARIANCE = 1.06


def normalised_entropy(counts: np.ndarray) -> np.ndarray:
    """Shannon entropy of category counts (last axis) divided by log(number of categories)."""
    counts = np.asarray(counts, float)
    prob = counts / counts.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(prob > 0, prob * np.log(prob), 0.0)
    return -terms.sum(axis=-1) / np.log(counts.shape[-1])


class ProxyConvergenceDetector:
    r"""Proxy-up / true-down trends, proxy-true decoupling, counterfactual pairs, collapse.

    Objectives are trace scores by name; a name's kind (``proxy`` or ``true``) is the kind
    most of its scores carry (guardrails are ignored). Trends and diversity use the
    ``source == "production"`` traces (shadow replays and eval runs are not traffic); a
    trace's value is its latest score by name.

    Four sub-tests, each an intersection-union test whose p-value is the larger of its two
    Holm-adjusted parts (so each is level ``alpha`` even when only one part moves):

    * ``trend``: one-sided Mann-Whitney U, current vs reference, for each proxy ("greater")
      and each true objective ("less"), Holm within each family; needs a proxy with a
      standardised rise :math:`(\bar x_{cur} - \bar x_{ref}) / s \ge` ``min_effect`` and a
      true objective with a standardised fall of at least ``min_effect`` (:math:`s` the
      pooled standard deviation).
    * ``decoupling``: a proxy that rose (as above) whose Spearman correlation with a true
      objective fell by at least ``min_correlation_drop``; Fisher z test on
      :math:`\operatorname{atanh}\rho`, variance :math:`1.06/(n-3)` per window, Holm over pairs.
    * ``counterfactual``: a current trace whose ``counterfactual_of`` names a trace (in
      either window) is the current policy's run and the named one its baseline on the same
      input (e.g. a shadow replay on the previous version); the pairs' differences
      (current - baseline) get one-sided Wilcoxon signed-rank tests of
      proxy gain and true loss, Holm within each family, effects ``>= min_effect`` baseline
      standard deviations.
    * ``diversity``: normalised Shannon entropy :math:`H/\log K` of ``decision`` categories;
      exact permutation test of :math:`H_{ref} - H_{cur}` (``n_permutations`` draws from the
      multivariate hypergeometric law of the current window's counts), drop
      ``>= min_entropy_drop``.

    The applicable sub-tests are Holm-combined at ``alpha``: the detector fires when any is
    rejected, so its false-alarm rate on stationary data is at most ``alpha``.
    ``statistic`` is :math:`-\log_{10}` of the smallest combined p-value and ``threshold`` is
    :math:`-\log_{10}\alpha`. No applicable sub-test gives ``insufficient_data``.

    Parameters
    ----------
    alpha : float, default 0.01
    min_effect : float, default 0.1
        Smallest standardised proxy rise / true fall (Cohen's d scale; 0.1 is a 4-point
        drop of a success rate near 80 %).
    min_correlation_drop : float, default 0.2
    min_entropy_drop : float, default 0.1
    min_traces : int, default 30
        Fewest traces with the score (or a decision) in each window.
    min_pairs : int, default 10
        Fewest counterfactual pairs with the score.
    n_permutations : int, default 999
    seed : int, default 0

    Examples
    --------
    >>> import numpy as np
    >>> from detectors.records import Score, TraceRecord
    >>> rng = np.random.default_rng(0)
    >>> def window(start, n, gaming):
    ...     out = []
    ...     for i in range(n):
    ...         quality = rng.normal()
    ...         proxy = 3.5 + 0.5 * quality + gaming + rng.normal(0, 0.3)
    ...         true = float(rng.random() < 1 / (1 + np.exp(-(1.5 + quality - 3 * gaming))))
    ...         out.append(TraceRecord(f"t{start + i}", "bot", "v1", start + i, start + i,
    ...                                scores=(Score("csat", proxy, "proxy"),
    ...                                        Score("resolved", true, "true", "delayed"))))
    ...     return out
    >>> res = ProxyConvergenceDetector().test(window(0, 300, 0.0), window(1000, 300, 0.4))
    >>> bool(res.fired), res.evidence["proxy_rose"][0]["name"], res.evidence["true_fell"][0]["name"]
    (True, 'csat', 'resolved')
    """

    needs: ClassVar[tuple[str, ...]] = (
        "proxy_scores",
        "true_scores",
        "decision",
        "counterfactual_runs",
    )

    def __init__(
        self,
        *,
        alpha: float = 0.01,
        min_effect: float = 0.1,
        min_correlation_drop: float = 0.2,
        min_entropy_drop: float = 0.1,
        min_traces: int = 30,
        min_pairs: int = 10,
        n_permutations: int = 999,
        seed: int = 0,
    ) -> None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        for name, value in (
            ("min_effect", min_effect),
            ("min_correlation_drop", min_correlation_drop),
            ("min_entropy_drop", min_entropy_drop),
        ):
            if not 0.0 <= value < 2.0 or value != value:
                raise ValueError(f"{name} must be in [0, 2), got {value!r}")
        check_integers_at_least(
            ("min_traces", min_traces, 4),
            ("min_pairs", min_pairs, 5),
            ("n_permutations", n_permutations, 99),
        )
        self.alpha = float(alpha)
        self.min_effect = float(min_effect)
        self.min_correlation_drop = float(min_correlation_drop)
        self.min_entropy_drop = float(min_entropy_drop)
        self.min_traces = int(min_traces)
        self.min_pairs = int(min_pairs)
        self.n_permutations = int(n_permutations)
        self.seed = int(seed)

    def test(
        self,
        reference: Sequence[TraceRecord],
        current: Sequence[TraceRecord],
        *,
        now: float | None = None,
    ) -> DetectorResult:
        """Compare the windows; ``now`` is not used (the windows are already as of then)."""
        ref = [t for t in reference if t.source == "production"]
        cur = [t for t in current if t.source == "production"]
        kinds = _objective_kinds([*reference, *current])
        proxies = sorted(n for n, k in kinds.items() if k == "proxy")
        trues = sorted(n for n, k in kinds.items() if k == "true")

        shifts: dict[str, dict[str, Any]] = {}
        for name in proxies + trues:
            shift = self._shift(name, ref, cur, kinds[name])
            if shift is not None:
                shifts[name] = shift
        for family in (proxies, trues):
            tested = [n for n in family if n in shifts]
            for n, p in zip(tested, holm([shifts[n]["p_value"] for n in tested]), strict=True):
                shifts[n]["p_holm"] = float(p)
        rose = [n for n in proxies if n in shifts and shifts[n]["effect"] >= self.min_effect]
        fell = [n for n in trues if n in shifts and shifts[n]["effect"] >= self.min_effect]
        subtests: dict[str, dict[str, Any]] = {}
        if any(n in shifts for n in proxies) and any(n in shifts for n in trues):
            subtests["trend"] = {
                "p_value": _iut(
                    [shifts[n]["p_holm"] for n in rose], [shifts[n]["p_holm"] for n in fell]
                ),
                "proxies": rose,
                "true_objectives": fell,
            }
        correlations = self._correlations(proxies, trues, ref, cur)
        if correlations:
            subtests["decoupling"] = self._decoupling(correlations, shifts, rose)
        counterfactual = self._counterfactual(
            [t for t in current if t.counterfactual_of],
            {t.trace_id: t for t in (*reference, *current)},
            proxies,
            trues,
        )
        if counterfactual is not None:
            subtests["counterfactual"] = counterfactual
        diversity = self._diversity(ref, cur)
        if diversity is not None:
            subtests["diversity"] = diversity
        if not subtests:
            return DetectorResult.insufficient(
                FAILURE_MODE,
                "no applicable sub-test: need a non-constant proxy and true objective with "
                f">= {self.min_traces} traces in both windows, >= {self.min_pairs} "
                "counterfactual pairs, or decisions in both windows",
                proxy_objectives=proxies,
                true_objectives=trues,
            )

        names = list(subtests)
        p_min, fired = holm_verdict(list(subtests.values()), alpha=self.alpha)
        evidence: dict[str, Any] = {
            "subtests": subtests,
            "objectives": shifts,
            "proxy_rose": [_brief(n, shifts[n]) for n in rose],
            "true_fell": [_brief(n, shifts[n]) for n in fell],
            "correlations": correlations,
            "fired_subtests": [n for n in names if subtests[n]["fired"]],
        }
        if fired:
            evidence["summary"] = _summary(evidence)
        return DetectorResult(
            failure_mode=FAILURE_MODE,
            statistic=float(-np.log10(max(p_min, 1e-300))),
            threshold=float(-np.log10(self.alpha)),
            p_value=p_min,
            fired=bool(fired),
            evidence=evidence,
        )

    def _shift(
        self, name: str, ref: Sequence[TraceRecord], cur: Sequence[TraceRecord], kind: str
    ) -> dict[str, Any] | None:
        """One-sided Mann-Whitney U of current vs reference in the harmful direction."""
        x_ref, x_cur = _values(ref, name), _values(cur, name)
        if min(x_ref.size, x_cur.size) < self.min_traces:
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

    def _correlations(
        self,
        proxies: Sequence[str],
        trues: Sequence[str],
        ref: Sequence[TraceRecord],
        cur: Sequence[TraceRecord],
    ) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for p in proxies:
            for q in trues:
                rho = [_spearman(window, p, q) for window in (ref, cur)]
                if any(r is None or r[1] < self.min_traces for r in rho):
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
        for row, p_adj in zip(rows, holm([r["p_value"] for r in rows]), strict=True):
            row["p_holm"] = float(p_adj)
        return rows

    def _decoupling(
        self, correlations: list[dict[str, Any]], shifts: dict[str, Any], rose: list[str]
    ) -> dict[str, Any]:
        candidates = [
            (max(row["p_holm"], shifts[row["proxy"]]["p_holm"]), row["proxy"], row["true"])
            for row in correlations
            if row["proxy"] in rose
            and row["rho_reference"] - row["rho_current"] >= self.min_correlation_drop
        ]
        best = min(candidates, default=(1.0, None, None))
        return {"p_value": float(best[0]), "proxy": best[1], "true": best[2]}

    def _counterfactual(
        self,
        runs: Sequence[TraceRecord],
        by_id: dict[str, TraceRecord],
        proxies: Sequence[str],
        trues: Sequence[str],
    ) -> dict[str, Any] | None:
        pairs = [(t, by_id[t.counterfactual_of]) for t in runs if t.counterfactual_of in by_id]
        results: dict[str, dict[str, Any]] = {}
        for name in [*proxies, *trues]:
            got = [(a.score(name), b.score(name)) for a, b in pairs]
            both = np.array([(a.value, b.value) for a, b in got if a and b], float)
            both = both[np.isfinite(both).all(axis=1)] if len(both) else both
            if len(both) < self.min_pairs:
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
        for family in (gained, lost):
            for n, p in zip(family, holm([results[n]["p_value"] for n in family]), strict=True):
                results[n]["p_holm"] = float(p)
        gained = [n for n in gained if results[n]["effect"] >= self.min_effect]
        lost = [n for n in lost if results[n]["effect"] >= self.min_effect]
        return {
            "p_value": _iut(
                [results[n]["p_holm"] for n in gained], [results[n]["p_holm"] for n in lost]
            ),
            "n_pairs": len(pairs),
            "objectives": results,
            "proxies": gained,
            "true_objectives": lost,
        }

    def _diversity(
        self, ref: Sequence[TraceRecord], cur: Sequence[TraceRecord]
    ) -> dict[str, Any] | None:
        d_ref = [t.decision for t in ref if t.decision is not None]
        d_cur = [t.decision for t in cur if t.decision is not None]
        categories = sorted(set(d_ref) | set(d_cur))
        if min(len(d_ref), len(d_cur)) < self.min_traces or len(categories) < 2:
            return None
        c_ref = np.array([Counter(d_ref)[c] for c in categories])
        c_cur = np.array([Counter(d_cur)[c] for c in categories])
        h_ref, h_cur = normalised_entropy(c_ref), normalised_entropy(c_cur)
        # Under exchangeability the current window's counts are a multivariate hypergeometric
        # draw from the pooled counts: an exact permutation test without permuting.
        rng = np.random.default_rng(self.seed)
        pooled = c_ref + c_cur
        perm_cur = rng.multivariate_hypergeometric(pooled, len(d_cur), size=self.n_permutations)
        null = normalised_entropy(pooled - perm_cur) - normalised_entropy(perm_cur)
        p = (1 + np.sum(null >= h_ref - h_cur - 1e-12)) / (self.n_permutations + 1)
        drop = float(h_ref - h_cur)
        top = Counter(d_cur).most_common(1)[0]
        return {
            "p_value": float(p) if drop >= self.min_entropy_drop else 1.0,
            "p_permutation": float(p),
            "entropy_reference": float(h_ref),
            "entropy_current": float(h_cur),
            "entropy_drop": drop,
            "n_categories": len(categories),
            "top_decision_current": {"decision": top[0], "share": top[1] / len(d_cur)},
        }


def _objective_kinds(traces: Sequence[TraceRecord]) -> dict[str, str]:
    votes: dict[str, Counter[str]] = {}
    for t in traces:
        for s in t.scores:
            if s.kind in ("proxy", "true"):
                votes.setdefault(s.name, Counter())[s.kind] += 1
    return {name: c.most_common(1)[0][0] for name, c in votes.items()}


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


def _iut(first: Sequence[float], second: Sequence[float]) -> float:
    """Intersection-union p-value: both families must have a rejection."""
    if not first or not second:
        return 1.0
    return float(max(min(first), min(second)))


def _brief(name: str, shift: dict[str, Any]) -> dict[str, Any]:
    keys = ("reference_mean", "current_mean", "change", "effect", "p_holm")
    return {"name": name, **{k: shift[k] for k in keys}}


def _summary(evidence: dict[str, Any]) -> str:
    parts = [f"sub-tests fired: {', '.join(evidence['fired_subtests'])}"]
    for row in evidence["proxy_rose"]:
        parts.append(
            f"proxy {row['name']} rose {row['reference_mean']:.3g} -> {row['current_mean']:.3g}"
            f" ({row['effect']:+.2f} sd)"
        )
    for row in evidence["true_fell"]:
        parts.append(
            f"true {row['name']} fell {row['reference_mean']:.3g} -> {row['current_mean']:.3g}"
            f" ({row['effect']:.2f} sd)"
        )
    diversity = evidence["subtests"].get("diversity")
    if diversity and diversity["fired"]:
        parts.append(
            f"decision entropy {diversity['entropy_reference']:.2f} -> "
            f"{diversity['entropy_current']:.2f}"
        )
    return "; ".join(parts)
