"""FM-7 :class:`ProxyConvergenceDetector`: four sub-tests, Holm-combined at ``alpha``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from detectors.params import MAX_RESAMPLES, Parameters, Resampled, Seeded, TraceSources, param
from detectors.proxy_convergence.counterfactual import counterfactual_test
from detectors.proxy_convergence.diversity import diversity_test
from detectors.proxy_convergence.objectives import (
    decoupling_test,
    holm_by_family,
    intersection_union,
    objective_kinds,
    objective_shift,
    rank_correlations,
)
from detectors.records import DetectorResult, TraceWindow
from detectors.significance import holm_verdict

FAILURE_MODE = "FM-7"


@dataclass(frozen=True, kw_only=True)
class ProxyConvergenceDetector(TraceSources, Resampled, Seeded, Parameters):
    r"""Proxy-up / true-down trends, proxy-true decoupling, counterfactual pairs, collapse.

    Objectives are trace scores by name; a name's kind (``proxy`` or ``true``) is the kind
    most of its scores carry (guardrails are ignored). Trends, correlations and
    diversity use the traces of ``sources`` (production by default: shadow replays and
    eval runs are not traffic); counterfactual pairs are read whatever their source (the
    replays are usually shadow runs). A trace's value is its latest score by name.

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
    sources : sequence of str, default ("production",)
        Trace sources whose objectives are trended (some of production, eval, shadow).

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
    window_counts: ClassVar[tuple[str, ...]] = ()
    checks_silence: ClassVar[bool] = False

    min_effect: float = param(0.1, ge=0.0, lt=2.0)
    min_correlation_drop: float = param(0.2, ge=0.0, lt=2.0)
    min_entropy_drop: float = param(0.1, ge=0.0, lt=2.0)
    min_traces: int = param(30, ge=4)
    min_pairs: int = param(10, ge=5)
    n_permutations: int = param(999, ge=99, le=MAX_RESAMPLES)

    def test(
        self, reference: TraceWindow, current: TraceWindow, *, now: float | None = None
    ) -> DetectorResult:
        """Compare the windows; ``now`` is not used (the windows are already as of then)."""
        ref, cur = self.of_sources(reference), self.of_sources(current)
        kinds = objective_kinds([*reference, *current])
        proxies = sorted(n for n, k in kinds.items() if k == "proxy")
        trues = sorted(n for n, k in kinds.items() if k == "true")

        shifts: dict[str, dict[str, Any]] = {}
        for name in proxies + trues:
            shift = objective_shift(name, kinds[name], ref, cur, min_traces=self.min_traces)
            if shift is not None:
                shifts[name] = shift
        holm_by_family(shifts, proxies, trues)
        rose = [n for n in proxies if n in shifts and shifts[n]["effect"] >= self.min_effect]
        fell = [n for n in trues if n in shifts and shifts[n]["effect"] >= self.min_effect]
        subtests: dict[str, dict[str, Any]] = {}
        if any(n in shifts for n in proxies) and any(n in shifts for n in trues):
            subtests["trend"] = {
                "p_value": intersection_union(
                    [shifts[n]["p_holm"] for n in rose], [shifts[n]["p_holm"] for n in fell]
                ),
                "proxies": rose,
                "true_objectives": fell,
            }
        correlations = rank_correlations(proxies, trues, ref, cur, min_traces=self.min_traces)
        if correlations:
            subtests["decoupling"] = decoupling_test(
                correlations, shifts, rose, min_correlation_drop=self.min_correlation_drop
            )
        counterfactual = counterfactual_test(
            [t for t in current if t.counterfactual_of],
            {t.trace_id: t for t in (*reference, *current)},
            proxies,
            trues,
            min_pairs=self.min_pairs,
            min_effect=self.min_effect,
        )
        if counterfactual is not None:
            subtests["counterfactual"] = counterfactual
        diversity = diversity_test(
            ref,
            cur,
            min_traces=self.min_traces,
            min_entropy_drop=self.min_entropy_drop,
            n_permutations=self.n_permutations,
            seed=self.seed,
        )
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
