"""FM-5 EvalOverfittingDetector: calibration, power, coverage tests, degenerate input."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from detectors.eval_overfitting import EvalOverfittingDetector
from detectors.records import Score, TraceRecord


@pytest.fixture(autouse=True, scope="module")
def _single_threaded() -> Iterator[None]:
    # kNN and BLAS thread pools only add contention on the small, shared CI machine
    with threadpool_limits(limits=1):
        yield


DIM = 16
CENTERS = np.random.default_rng(1234).normal(0, 3, (10, DIM))  # 0-7 shared, 8-9 novel


def inputs(rng: np.random.Generator, n: int, novel_share: float = 0.0) -> np.ndarray:
    novel = rng.random(n) < novel_share
    cluster = np.where(novel, rng.integers(8, 10, n), rng.integers(0, 8, n))
    return CENTERS[cluster] + rng.normal(size=(n, DIM))


def version_runs(
    rng: np.random.Generator,
    version: str,
    t0: float,
    *,
    p_eval: float,
    p_prod: float,
    eval_set: np.ndarray | None = None,
    n_eval: int = 300,
    n_prod: int = 600,
    novel_share: float = 0.0,
) -> list[TraceRecord]:
    """One version's eval-harness runs (the same eval cases each version) and production."""
    out = []
    for source, n, p in (("eval", n_eval, p_eval), ("production", n_prod, p_prod)):
        ok = rng.random(n) < p
        if eval_set is None:
            vectors: np.ndarray | list[None] = [None] * n
        else:
            vectors = eval_set[:n] if source == "eval" else inputs(rng, n, novel_share)
        for i in range(n):
            key = f"case-{i}" if source == "eval" else f"{version}-user-{i}"
            out.append(
                TraceRecord(
                    trace_id=f"{version}-{source}-{i}",
                    agent="planner",
                    agent_version=version,
                    started_at=t0 + i,
                    ended_at=t0 + i + 5,
                    status="ok" if ok[i] else "error",
                    input_hash=key,
                    source=source,
                    input_embedding=vectors[i],
                )
            )
    return out


def scenario(
    seed: int,
    *,
    overfit: float = 0.0,
    novel_share: float = 0.0,
    embeddings: bool = False,
    reference: bool = True,
    ref_novel_share: float = 0.0,
) -> tuple[list[TraceRecord], list[TraceRecord]]:
    """v1, v2 in the reference window and v3, v4 in the current one.

    Clean: eval success 0.85, production 0.75 for every version (a constant, known gap).
    ``overfit`` s: version k of the current window (k = 1, 2) moves eval up and production
    down by k * s / 2 each, so v4's gap exceeds the reference gap by 2 s.
    """
    rng = np.random.default_rng(seed)
    eval_set = inputs(rng, 300) if embeddings else None
    ref: list[TraceRecord] = []
    if reference:
        for k, version in enumerate(("v1", "v2")):
            ref += version_runs(
                rng,
                version,
                1e4 * k,
                p_eval=0.85,
                p_prod=0.75,
                eval_set=eval_set,
                novel_share=ref_novel_share,
            )
    cur: list[TraceRecord] = []
    for k, version in enumerate(("v3", "v4"), start=1):
        cur += version_runs(
            rng,
            version,
            1e4 * (k + 1),
            p_eval=0.85 + k * overfit / 2,
            p_prod=0.75 - k * overfit / 2,
            eval_set=eval_set,
            novel_share=novel_share,
        )
    return ref, cur


DETECTOR = EvalOverfittingDetector()


def test_quiet_on_stationary_versions() -> None:
    fires = sum(DETECTOR.test(*scenario(seed)).fired for seed in range(50))
    assert fires <= 2  # here 0 / 50; 1 / 200 other seeds


def test_fires_on_moderate_overfitting() -> None:
    results = [DETECTOR.test(*scenario(100 + s, overfit=0.07)) for s in range(20)]
    assert sum(r.fired for r in results) >= 18  # here 20 / 20; 95 % of 100 other seeds
    r = results[0]
    assert r.status == "ok" and r.failure_mode == "FM-5"
    assert r.p_value is not None and r.p_value <= 0.01 and r.statistic >= r.threshold
    v4 = next(g for g in r.evidence["gaps"] if g["agent_version"] == "v4")
    assert v4["gap"] > v4["reference_gap"] + 0.05
    trend = r.evidence["trends"][0]
    assert trend["versions"] == ["v1", "v2", "v3", "v4"]
    assert trend["spearman_eval"] > 0 > trend["spearman_production"]
    assert trend["eval_rising_production_flat_or_falling"] is True
    assert "v4" in r.evidence["summary"]


def test_shadow_replays_can_stand_for_production() -> None:
    """With ``sources=["shadow"]`` the eval harness is held against shadow replays of real
    inputs; the production traces are then left out."""
    reference, current = scenario(100, overfit=0.07)

    def as_shadow(window: list[TraceRecord]) -> list[TraceRecord]:
        return [replace(t, source="shadow") if t.source == "production" else t for t in window]

    shadow = EvalOverfittingDetector(sources=["shadow"])
    assert shadow.test(as_shadow(reference), as_shadow(current)) == DETECTOR.test(
        reference, current
    )
    assert shadow.test(reference, current).status == "insufficient_data"


def test_gap_without_reference_uses_minimum_gap() -> None:
    detector = EvalOverfittingDetector()
    r = detector.test(*scenario(5, reference=False))  # a persistent 0.1 gap, nothing to compare
    assert r.fired and r.evidence["gaps"][0]["reference_gap"] is None
    assert not EvalOverfittingDetector(min_gap=0.2).test(*scenario(5, reference=False)).fired


def test_shared_improvement_is_not_overfitting() -> None:
    rng = np.random.default_rng(8)
    ref = version_runs(rng, "v1", 0, p_eval=0.8, p_prod=0.7)
    ref += version_runs(rng, "v2", 1e4, p_eval=0.84, p_prod=0.74)
    cur = version_runs(rng, "v3", 2e4, p_eval=0.88, p_prod=0.78)
    cur += version_runs(rng, "v4", 3e4, p_eval=0.92, p_prod=0.82)
    r = DETECTOR.test(ref, cur)
    assert not r.fired
    assert r.evidence["trends"][0]["spearman_production"] > 0


def test_coverage_quiet_when_production_matches_eval() -> None:
    detector = EvalOverfittingDetector(fire_on_coverage=True)
    results = [detector.test(*scenario(200 + s, embeddings=True)) for s in range(15)]
    assert sum(r.fired for r in results) == 0
    aucs = [r.evidence["coverage"][0]["classifier_auc"] for r in results]
    outside = [r.evidence["coverage"][0]["outside_fraction"] for r in results]
    assert 0.4 < np.mean(aucs) < 0.6
    assert np.mean(outside) < 0.08  # about 1 - coverage_quantile
    # the eval set is replayed by all four versions: de-duplicated to 300 distinct inputs
    assert results[0].evidence["coverage"][0]["n_eval_inputs"] == 300


def test_newly_uncovered_production_inputs_fire() -> None:
    ref, cur = scenario(300, embeddings=True, novel_share=0.3)
    r = DETECTOR.test(ref, cur)
    cov = r.evidence["coverage"][0]
    assert r.fired and "outside the eval set" in r.evidence["summary"]
    assert cov["outside_fraction"] > cov["reference_outside_fraction"] + 0.1
    assert cov["classifier_auc"] > 0.55 and cov["p_knn"] < 1e-6 and cov["p_auc"] < 1e-6
    evidence_only = EvalOverfittingDetector(fire_on_coverage=False).test(ref, cur)
    assert not evidence_only.fired  # the success gap did not move
    assert evidence_only.evidence["coverage"][0]["outside_fraction"] == cov["outside_fraction"]


def test_power_on_moderate_coverage_loss() -> None:
    results = [
        DETECTOR.test(*scenario(400 + s, embeddings=True, novel_share=0.2)) for s in range(10)
    ]
    assert sum(r.fired for r in results) >= 9  # here 10 / 10; 50 / 50 other seeds


def test_lasting_mismatch_is_known_but_new_one_is_not() -> None:
    # production always had 30 % novel intents: compared with the reference window, quiet
    ref, cur = scenario(301, embeddings=True, novel_share=0.3, ref_novel_share=0.3)
    r = DETECTOR.test(ref, cur)
    assert not r.fired
    assert r.evidence["coverage"][0]["outside_fraction"] > 0.2
    # without reference production inputs, the same share is judged against the eval set
    no_ref_prod = [t for t in ref if t.source == "eval"]
    assert DETECTOR.test(no_ref_prod, cur).fired


@pytest.mark.parametrize(
    "case", ["empty", "one_trace", "production_only", "too_few_eval", "no_embeddings"]
)
def test_degenerate_input_is_insufficient(case: str) -> None:
    ref, cur = scenario(9, overfit=0.1)
    if case == "empty":
        ref, cur = [], []
    elif case == "one_trace":
        ref, cur = ref[:1], cur[:1]
    elif case == "production_only":
        cur = [t for t in cur if t.source == "production"]
    elif case == "too_few_eval":
        cur = [t for t in cur if t.source == "production" or int(t.trace_id.split("-")[-1]) < 20]
        ref = ref[:0]
    elif case == "no_embeddings":
        ref, cur = [], [t for t in cur if t.agent_version == "v3"][:25]
    r = DETECTOR.test(ref, cur)
    assert r.status == "insufficient_data" and not r.fired and r.evidence["reason"]


def test_constant_success_does_not_fire() -> None:
    rng = np.random.default_rng(4)
    ref = version_runs(rng, "v1", 0, p_eval=1.0, p_prod=1.0)
    cur = version_runs(rng, "v2", 1e4, p_eval=1.0, p_prod=1.0)
    r = DETECTOR.test(ref, cur)
    assert r.status == "ok" and not r.fired and r.evidence["gaps"][0]["gap"] == 0.0


def test_success_score_overrides_status() -> None:
    rng = np.random.default_rng(6)
    cur = version_runs(rng, "v1", 0, p_eval=1.0, p_prod=1.0)
    failed = Score("success", 0.0, "true", "online")
    cur = [
        TraceRecord(
            t.trace_id,
            t.agent,
            t.agent_version,
            t.started_at,
            t.ended_at,
            source=t.source,
            scores=(failed,) if t.source == "production" else (),
        )
        for t in cur
    ]
    r = DETECTOR.test([], cur)
    assert r.fired and r.evidence["gaps"][0]["production_success"] == 0.0


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("alpha", 0.0),
        ("min_gap", 1.0),
        ("min_auc", 0.4),
        ("min_outside", -0.1),
        ("coverage_quantile", 0.3),
        ("min_traces", 5),
        ("min_versions", 2),
        ("n_folds", 1),
        ("max_samples", 10.5),
        ("fire_on_coverage", 1),
    ],
)
def test_invalid_parameters_name_the_parameter(param: str, value: float) -> None:
    with pytest.raises(ValueError, match=param):
        EvalOverfittingDetector(**{param: value})
