"""FM-3 non-deterministic output drift: the same input gets different answers."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from detectors.params import param
from detectors.records import DetectorResult, TraceRecord, TraceWindow
from detectors.significance import holm_verdict, sub_test
from detectors.window_permutation import WindowTest

FAILURE_MODE = "FM-3"
# Columns of one input group's counts: disagreeing / all decision pairs, disagreeing /
# cross-entry-point pairs, disagreeing / same-entry-point pairs, summed cosine distance /
# embedding pairs; the group's disagreement rate times its weight n - 1 / that weight
# (n: its traces with a decision; see decision_disagreement).
DIS, PAIRS, DIS_CROSS, CROSS, DIS_SAME, SAME, DIST, EMB_PAIRS, W_DIS, W = range(10)


def _pairs(n: int | np.ndarray) -> Any:
    return n * (n - 1) / 2


def _group_counts(traces: list[TraceRecord]) -> np.ndarray:
    decided = [t for t in traces if t.decision is not None]
    by_decision = Counter(t.decision for t in decided)
    by_entry = Counter(t.entry_point or "" for t in decided)
    by_both = Counter((t.decision, t.entry_point or "") for t in decided)
    pairs = _pairs(len(decided))
    agree = sum(_pairs(c) for c in by_decision.values())
    cross = pairs - sum(_pairs(c) for c in by_entry.values())
    cross_agree = agree - sum(_pairs(c) for c in by_both.values())
    # Embedding spread is measured among runs that reached the same decision, so it adds
    # what the decision disagreement cannot see (same answer, drifting content).
    by_class: dict[str | None, list[np.ndarray]] = defaultdict(list)
    for t in traces:
        if t.output_embedding is not None:
            v = np.asarray(t.output_embedding, dtype=float)
            norm = float(np.linalg.norm(v))
            if norm > 0:
                by_class[t.decision].append(v / norm)
    emb_pairs, dist = 0.0, 0.0
    for units in by_class.values():
        n = len(units)
        # sum_{i<j} (1 - u_i.u_j) = pairs - (|sum u|^2 - n) / 2 for unit vectors u
        dist += _pairs(n) - (float(np.sum(np.sum(units, axis=0) ** 2)) - n) / 2
        emb_pairs += _pairs(n)
    dis_cross = cross - cross_agree
    dis = pairs - agree
    weight = len(decided) - 1.0 if pairs else 0.0
    rate = dis / pairs if pairs else 0.0
    return np.array(
        [
            dis, pairs, dis_cross, cross, dis - dis_cross, pairs - cross, dist, emb_pairs,
            weight * rate, weight,
        ],
        float,
    )  # fmt: skip


# The approximate input identity (near-duplicate inputs, e.g. paraphrases) the server
# derives from input embeddings (app/derive/groups.py); a trace without one has its hash.
INPUT_GROUP = "telltale.input_group"


def input_key(t: TraceRecord) -> str | None:
    """The trace's input group when it has one, else its input hash.

    >>> input_key(TraceRecord("t", "a", input_hash="h1")), input_key(
    ...     TraceRecord("t", "a", input_hash="h2", attributes={INPUT_GROUP: "h1"}))
    ('h1', 'h1')
    """
    group = t.attributes.get(INPUT_GROUP)
    return str(group) if group else t.input_hash


def _groups(traces: Sequence[TraceRecord]) -> dict[tuple[str, str, str], list[TraceRecord]]:
    groups: dict[tuple[str, str, str], list[TraceRecord]] = defaultdict(list)
    for t in traces:
        key = input_key(t)
        if key is not None:
            groups[(t.agent, t.agent_version, key)].append(t)
    return {k: v for k, v in groups.items() if len(v) >= 2}


def _ratio(sums: np.ndarray, num: int, den: int) -> np.ndarray:
    return np.asarray(sums[..., num] / np.maximum(sums[..., den], 1.0))


def decision_disagreement(sums: np.ndarray) -> np.ndarray:
    """The groups' pair disagreement rates, averaged with weights ``n - 1``.

    A group's rate (the share of its pairs of runs whose decisions differ) is the unbiased
    Gini-Simpson index of its decisions, which is a variance of categorical data (Light &
    Margolin 1971, "An analysis of variance for categorical data", JASA 66:534). Pooling
    groups with weights ``n - 1`` is the pooled within-group variance of a one-way ANOVA.
    Pooling *pairs* instead weighs a group by ``n (n - 1) / 2``, so the few most repeated
    inputs decide the window. Measured on the alerting bench's moderate FM-3 step (failure
    seed 0), each run's p: 0.026 with pairs pooled and 0.00015 with these weights, 45
    minutes after onset. The permutation test shuffles whole groups whatever the statistic,
    so it stays exact under the null.
    """
    return _ratio(sums, W_DIS, W)


def pair_disagreement(sums: np.ndarray) -> np.ndarray:
    """The share of all pairs of runs, pooled over groups, whose decisions differ."""
    return _ratio(sums, DIS, PAIRS)


def cross_entry_excess(sums: np.ndarray) -> np.ndarray:
    """Cross-entry-point minus same-entry-point disagreement (the cross rate alone when
    no same-entry pairs exist)."""
    return _ratio(sums, DIS_CROSS, CROSS) - _ratio(sums, DIS_SAME, SAME)


def embedding_distance(sums: np.ndarray) -> np.ndarray:
    return _ratio(sums, DIST, EMB_PAIRS)


# sub-test -> (statistic on pooled group counts, column a group needs > 0 to count)
SUB_TESTS = {
    "decision_disagreement": (decision_disagreement, PAIRS),
    "cross_entry_excess": (cross_entry_excess, CROSS),
    "embedding_distance": (embedding_distance, EMB_PAIRS),
}


@dataclass(frozen=True, kw_only=True)
class OutputDriftDetector(WindowTest):
    """FM-3: disagreement among repeated runs of the same input, against a reference.

    Traces are grouped by ``(agent, agent_version, input)``, the input being the trace
    attribute ``telltale.input_group`` (one intent: near-duplicate inputs, derived by the
    server from input embeddings) when present, else ``input_hash``; groups with at least
    two traces are the units of independence. Per window:

    * **decision_disagreement**: the fraction of trace pairs inside a group whose
      ``decision`` attribute differs, averaged over groups with weights ``n - 1`` (the
      pooled within-group variance; :func:`decision_disagreement`). The pooled pair rate
      is reported beside it as ``pair_disagreement``;
    * **cross_entry_excess**: the disagreement over pairs whose ``entry_point`` differs
      minus that over pairs with the same entry point (consistency of one intent across
      entry points, net of plain non-determinism; both rates are reported);
    * **embedding_distance**: mean pairwise cosine distance ``1 - cos`` of output
      embeddings inside a group, among pairs with the same decision (all pairs when traces
      carry no decision), pooled over groups: content drift the decision does not show.

    Each is compared with the reference window by a one-sided permutation test that
    shuffles whole groups between the windows (inputs that are ambiguous in both windows
    therefore cannot fire it), Holm-adjusted at ``alpha``; a sub-test fires only if its
    increase is also at least ``min_disagreement_increase`` (both disagreement rates) or
    ``min_distance_increase``. A sub-test runs only when each window has ``min_groups``
    groups with such pairs; with no usable reference the result is insufficient data
    (absolute disagreement has no natural threshold).

    The result's ``statistic`` is the current decision disagreement (else the first
    sub-test that ran), ``threshold`` the reference value plus the minimum increase,
    ``p_value`` the smallest Holm-adjusted p; ``evidence`` holds each rate for both windows
    (also the plain cross- and same-entry-point disagreement) and
    ``most_inconsistent_inputs`` (input hash, version, decisions and entry points seen).

    Calibration (tests/detectors/test_output_drift.py's ``fire_rates``, seeded, with the
    disagreement weighted by runs): clean windows with per-input ambiguity fire 0/100
    runs (2/100 pooling pairs); with 250 inputs run 2-5 times, pair disagreement 0.09 ->
    0.23 is caught in 20/20 runs, one entry point answering 30% of inputs differently in
    20/20, output-embedding noise x1.7 in 20/20.

    Parameters
    ----------
    alpha, n_permutations, seed, sources : see :class:`detectors.window_permutation.WindowTest`
    min_groups : int, default 20
    min_disagreement_increase : float, default 0.05
    min_distance_increase : float, default 0.02

    Examples
    --------
    >>> from detectors.records import TraceRecord
    >>> rng = np.random.default_rng(0)
    >>> def window(flip):
    ...     return [
    ...         TraceRecord(f"t{i}-{k}", "agent", "v1", input_hash=f"h{i}",
    ...                     attributes={"decision": "no" if rng.random() < flip else "yes"})
    ...         for i in range(60) for k in range(3)
    ...     ]
    >>> result = OutputDriftDetector().test(window(0.05), window(0.3))
    >>> result.fired, round(result.statistic, 2)
    (True, 0.41)
    >>> OutputDriftDetector().test(window(0.05), window(0.05)).fired
    False
    """

    needs: ClassVar[tuple[str, ...]] = ("input_hash", "decision", "entry_point", "output_embedding")
    window_counts: ClassVar[tuple[str, ...]] = ()
    checks_silence: ClassVar[bool] = False

    min_groups: int = param(20, ge=2)
    min_disagreement_increase: float = param(0.05, ge=0.0, lt=1.0)
    min_distance_increase: float = param(0.02, ge=0.0, lt=2.0)

    def test(
        self, reference: TraceWindow, current: TraceWindow, *, now: float | None = None
    ) -> DetectorResult:
        """Compare the windows; ``now`` is not used (the windows are already as of then)."""
        cur_groups = _groups(self.of_sources(current))
        ref_groups = _groups(self.of_sources(reference))
        if min(len(cur_groups), len(ref_groups)) < self.min_groups:
            return DetectorResult.insufficient(
                FAILURE_MODE,
                f"{len(cur_groups)} current and {len(ref_groups)} reference groups of repeated "
                f"inputs (need {self.min_groups} each)",
            )
        cur = np.array([_group_counts(g) for g in cur_groups.values()])
        ref = np.array([_group_counts(g) for g in ref_groups.values()])
        ev: dict[str, Any] = {"groups": len(cur_groups), "reference_groups": len(ref_groups)}
        sub_tests: dict[str, dict[str, Any]] = {}
        for name, (statistic, needs) in SUB_TESTS.items():
            if min(np.count_nonzero(cur[:, needs]), np.count_nonzero(ref[:, needs])) < (
                self.min_groups
            ):
                continue
            diff, p = self.permutation_test(cur, ref, statistic)
            ev[name] = float(statistic(cur.sum(axis=0)))
            ev[f"reference_{name}"] = float(statistic(ref.sum(axis=0)))
            sub_tests[name] = sub_test(p, diff >= self._min_increase(name))
        for name, window in (("", cur), ("reference_", ref)):
            sums = window.sum(axis=0)
            if sums[CROSS] > 0:
                ev[f"{name}cross_entry_disagreement"] = float(_ratio(sums, DIS_CROSS, CROSS))
            if sums[SAME] > 0:
                ev[f"{name}same_entry_disagreement"] = float(_ratio(sums, DIS_SAME, SAME))
            if sums[PAIRS] > 0:
                ev[f"{name}pair_disagreement"] = float(pair_disagreement(sums))
        if not sub_tests:
            return DetectorResult.insufficient(
                FAILURE_MODE, "repeated inputs carry no decisions or output embeddings", **ev
            )
        verdict = holm_verdict(list(sub_tests.values()), alpha=self.alpha)
        ev["sub_tests"] = sub_tests
        ev["most_inconsistent_inputs"] = _most_inconsistent(cur_groups, cur)
        lead = (
            "decision_disagreement"
            if "decision_disagreement" in sub_tests
            else next(iter(sub_tests))
        )
        return DetectorResult(
            failure_mode=FAILURE_MODE,
            statistic=float(ev[lead]),
            threshold=float(ev[f"reference_{lead}"] + self._min_increase(lead)),
            p_value=verdict.p_value,
            fired=verdict.fired,
            evidence=ev,
        )

    def _min_increase(self, sub_test_name: str) -> float:
        if sub_test_name == "embedding_distance":
            return self.min_distance_increase
        return self.min_disagreement_increase


def _most_inconsistent(
    groups: dict[tuple[str, str, str], list[TraceRecord]], counts: np.ndarray, top: int = 5
) -> list[dict[str, Any]]:
    rows = []
    for (agent, version, input_hash), traces in groups.items():
        rows.append((agent, version, input_hash, traces))
    order = sorted(
        range(len(rows)),
        key=lambda i: (
            -counts[i, DIS] / max(counts[i, PAIRS], 1.0),
            -counts[i, DIST] / max(counts[i, EMB_PAIRS], 1.0),
            -len(rows[i][3]),
            rows[i][2],
        ),
    )
    out = []
    for i in order[:top]:
        agent, version, input_hash, traces = rows[i]
        out.append(
            {
                "input_hash": input_hash,
                "agent": agent,
                "agent_version": version,
                "traces": len(traces),
                "disagreement": float(counts[i, DIS] / max(counts[i, PAIRS], 1.0)),
                "decisions": dict(Counter(t.decision or "" for t in traces).most_common()),
                "entry_points": dict(Counter(t.entry_point or "" for t in traces).most_common()),
                "trace_ids": [t.trace_id for t in traces[:5]],
            }
        )
    return out
