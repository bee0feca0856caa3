"""FM-5 :class:`EvalOverfittingDetector`: gap, trend and coverage, Holm-combined."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from detectors.eval_overfitting.input_coverage import input_coverage
from detectors.eval_overfitting.version_trend import version_trend
from detectors.params import Parameters, Seeded, TraceSources, param
from detectors.records import DetectorResult, TraceRecord, TraceWindow
from detectors.significance import holm_verdict

FAILURE_MODE = "FM-5"


def success_counts(traces: Sequence[TraceRecord], source: str) -> tuple[int, int]:
    """(successes, traces) among the traces from ``source``."""
    chosen = [t.success for t in traces if t.source == source]
    return int(sum(chosen)), len(chosen)


def _var(successes: int, n: int) -> float:
    # Agresti-Caffo: one pseudo-success and one pseudo-failure keep p = 0 or 1 from
    # claiming zero variance.
    p = (successes + 1) / (n + 2)
    return p * (1 - p) / (n + 2)


@dataclass(frozen=True, kw_only=True)
class EvalOverfittingDetector(TraceSources, Seeded, Parameters):
    r"""Eval-vs-production success gap per version, version trend, and input coverage.

    **Gap** (per agent and version in the current window, ``>= min_traces`` eval and
    production traces): :math:`g = \hat p_{eval} - \hat p_{prod}` (success: the ``success``
    score, else ``status == "ok"``). With a reference (the agent's eval and production traces
    pooled over the reference window) the one-sided z test of
    :math:`g_{cur} - g_{ref} > 0`, variances Agresti-Caffo adjusted, fires when the excess is
    ``>= min_gap``; without one, Fisher's exact test (eval more successful) with
    :math:`g \ge` ``min_gap``. A constant, known eval/production gap therefore never fires
    once a reference exists.

    **Trend** (agents with ``>= min_versions`` versions, ordered by first-seen time over both
    windows): linear-probability slopes :math:`b_{eval}, b_{prod}` of success on version rank;
    one-sided z test of :math:`b_{eval} - b_{prod} > 0`, gated on the eval rise and the
    divergence over the version span both being ``>= min_gap``. Spearman's rho of per-version
    eval and production success vs version order is reported, with the flag
    ``eval_rising_production_flat_or_falling``.

    **Coverage** (per agent: current production inputs vs the de-duplicated eval inputs of
    both windows, unit-normalised ``input_embedding``): the share of production inputs whose
    nearest eval input is farther than the eval set's leave-one-out ``coverage_quantile``
    radius, and a classifier two-sample test (logistic regression, ``n_folds``-fold
    cross-validated AUC with a Mann-Whitney p-value on the out-of-fold scores; AUC ~ 0.5 when
    the sets match). With reference-window production inputs, the share is compared with the
    reference share (Fisher's exact test, increase ``>= min_outside``) and the AUC is
    supporting evidence, so a lasting eval/production mismatch does not alert every window;
    without them, the share is judged against the eval set itself (exact
    negative-hypergeometric p-value under exchangeability, share ``>= min_outside``) or the
    AUC (``>= min_auc``), Bonferroni over the two.

    Gap, trend and (with ``fire_on_coverage``, the default) coverage p-values are
    Holm-combined at ``alpha``; the detector fires when any passing its effect gate is
    rejected, so the false-alarm rate on stationary data is at most ``alpha``.

    Parameters
    ----------
    alpha : float, default 0.01
    min_gap : float, default 0.05
        Smallest gap excess (or gap, without a reference) worth an alert.
    min_traces : int, default 30
        Fewest eval and production traces for a version (and embeddings for coverage).
    min_versions : int, default 3
    min_auc : float, default 0.55
    min_outside : float, default 0.1
        Smallest share of production inputs outside the eval radius (its increase over the
        reference window when that has production inputs).
    coverage_quantile : float, default 0.95
    fire_on_coverage : bool, default True
        False keeps the coverage statistics as evidence only.
    n_folds : int, default 5
    max_samples : int, default 2000
        Embeddings per side beyond this are subsampled (seeded) for the coverage tests.
    seed : int, default 0
    sources : sequence of str, default ("production",)
        The traffic the eval harness is held against: production, or shadow replays of
        real inputs (a candidate version's traffic before it serves), or both (then read
        as one side). ``eval`` is refused: eval runs are the other side of every test.

    Examples
    --------
    >>> import numpy as np
    >>> from detectors.records import TraceRecord
    >>> rng = np.random.default_rng(0)
    >>> def runs(version, t0, p_eval, p_prod, n=300):
    ...     return [TraceRecord(f"{version}-{src}-{i}", "bot", version, t0 + i, t0 + i,
    ...                         status="ok" if rng.random() < p else "error", source=src)
    ...             for src, p in (("eval", p_eval), ("production", p_prod)) for i in range(n)]
    >>> reference = runs("v1", 0, 0.85, 0.75)
    >>> current = runs("v2", 1000, 0.95, 0.70)
    >>> res = EvalOverfittingDetector().test(reference, current)
    >>> bool(res.fired), res.evidence["gaps"][0]["agent_version"]
    (True, 'v2')
    """

    needs: ClassVar[tuple[str, ...]] = ("eval_traces", "input_embedding")
    window_counts: ClassVar[tuple[str, ...]] = ()
    checks_silence: ClassVar[bool] = False

    min_gap: float = param(0.05, ge=0.0, lt=1.0)
    min_traces: int = param(30, ge=10)
    min_versions: int = param(3, ge=3)
    min_auc: float = param(0.55, ge=0.5, lt=1.0)
    min_outside: float = param(0.1, ge=0.0, lt=1.0)
    coverage_quantile: float = param(0.95, gt=0.5, lt=1.0)
    fire_on_coverage: bool = param(True)
    n_folds: int = param(5, ge=2, le=20)
    max_samples: int = param(2000, ge=50, le=20_000)
    # The traffic the eval harness is held against (eval runs are the other side).
    sources: frozenset[str] = param(("production",), choices=("production", "shadow"))

    def test(
        self, reference: TraceWindow, current: TraceWindow, *, now: float | None = None
    ) -> DetectorResult:
        """Compare the windows; ``now`` is not used (the windows are already as of then)."""
        reference, current = self._sides(reference), self._sides(current)
        gaps, trends, coverage = [], [], []
        for agent in sorted({t.agent for t in current if t.source == "eval"}):
            ref = [t for t in reference if t.agent == agent]
            cur = [t for t in current if t.agent == agent]
            gaps += self._gaps(agent, ref, cur)
            trend = version_trend(
                agent,
                [*ref, *cur],
                min_traces=self.min_traces,
                min_versions=self.min_versions,
                min_gap=self.min_gap,
            )
            if trend is not None:
                trends.append(trend)
            cov = input_coverage(
                agent,
                ref,
                cur,
                min_traces=self.min_traces,
                min_outside=self.min_outside,
                min_auc=self.min_auc,
                coverage_quantile=self.coverage_quantile,
                n_folds=self.n_folds,
                max_samples=self.max_samples,
                seed=self.seed,
            )
            if cov is not None:
                coverage.append(cov)
        family = gaps + trends + (coverage if self.fire_on_coverage else [])
        if not family:
            return DetectorResult.insufficient(
                FAILURE_MODE,
                f"no agent version with >= {self.min_traces} eval and production traces in the "
                f"current window, and no agent with >= {self.min_versions} such versions",
                coverage=coverage,
            )
        verdict = holm_verdict(family, alpha=self.alpha)
        fired = [t for t in family if t["fired"]]
        excess = [t["excess"] for t in family]
        evidence: dict[str, Any] = {"gaps": gaps, "trends": trends, "coverage": coverage}
        if fired:
            evidence["summary"] = "; ".join(t["summary"] for t in fired)
        return DetectorResult(
            failure_mode=FAILURE_MODE,
            statistic=float(max(excess)) if excess else float("nan"),
            threshold=self.min_gap,
            p_value=verdict.p_value,
            fired=verdict.fired,
            evidence=evidence,
        )

    def _sides(self, window: Sequence[TraceRecord]) -> list[TraceRecord]:
        """The window as the tests read it: eval runs, and the traces of ``sources`` as the
        production side; other traces keep only their place in the versions' order."""
        role = {source: "production" for source in self.sources}
        out = []
        for t in window:
            side = "eval" if t.source == "eval" else role.get(t.source, "unread")
            out.append(t if side == t.source else replace(t, source=side))
        return out

    def _gaps(
        self, agent: str, ref: Sequence[TraceRecord], cur: Sequence[TraceRecord]
    ) -> list[dict[str, Any]]:
        xe_r, ne_r = success_counts(ref, "eval")
        xp_r, np_r = success_counts(ref, "production")
        has_ref = min(ne_r, np_r) >= self.min_traces
        gap_ref = xe_r / ne_r - xp_r / np_r if has_ref else None
        rows = []
        for version in sorted({t.agent_version for t in cur}):
            members = [t for t in cur if t.agent_version == version]
            (xe, ne), (xp, n_p) = (
                success_counts(members, "eval"),
                success_counts(members, "production"),
            )
            if min(ne, n_p) < self.min_traces:
                continue
            gap = xe / ne - xp / n_p
            if gap_ref is not None:
                se = np.sqrt(_var(xe, ne) + _var(xp, n_p) + _var(xe_r, ne_r) + _var(xp_r, np_r))
                excess = gap - gap_ref
                p = float(stats.norm.sf(excess / se))
            else:
                excess = gap
                table = [[xe, ne - xe], [xp, n_p - xp]]
                p = float(stats.fisher_exact(table, alternative="greater").pvalue)
            rows.append(
                {
                    "test": "gap",
                    "agent": agent,
                    "agent_version": version,
                    "eval_success": xe / ne,
                    "production_success": xp / n_p,
                    "n_eval": ne,
                    "n_production": n_p,
                    "gap": gap,
                    "reference_gap": gap_ref,
                    "excess": float(excess),
                    "p_value": p,
                    "effect_ok": bool(excess >= self.min_gap),
                    "summary": (
                        f"{agent} {version}: eval success {xe / ne:.3f} vs production "
                        f"{xp / n_p:.3f} (gap {gap:.3f}"
                        + (f", reference gap {gap_ref:.3f})" if gap_ref is not None else ")")
                    ),
                }
            )
        return rows
