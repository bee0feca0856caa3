"""FM-7 ProxyConvergenceDetector: calibration, power per sub-test, degenerate input."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from detectors.proxy_convergence import ProxyConvergenceDetector, normalised_entropy
from detectors.records import Score, TraceRecord
from detectors.significance import holm

DECISIONS = ("refund", "replace", "escalate", "deny", "ask")
BASE_MIX = np.array([0.35, 0.25, 0.2, 0.12, 0.08])
PROXY_SD = float(np.hypot(0.5, 0.3))  # sd of the proxy score at baseline


def batch(
    rng: np.random.Generator,
    prefix: str,
    t0: float,
    quality: np.ndarray,
    *,
    gaming: float = 0.0,
    true_drop: float = 0.0,
    decoupling: float = 0.0,
    collapse: float = 0.0,
    draws: np.ndarray | None = None,
    replay_of: str | None = None,
    source: str = "production",
) -> list[TraceRecord]:
    """Traces whose csat (proxy) and resolved (true) scores both follow a latent quality.

    ``gaming`` raises csat by that many standard deviations, ``true_drop`` lowers the
    resolution probability, ``decoupling`` (0..1) replaces csat's dependence on quality by
    noise, ``collapse`` (0..1) pulls the decision mix towards the first category; ``draws``
    fixes the uniforms behind ``resolved`` (a replay of an input shares its baseline's), and
    ``replay_of`` makes trace i a counterfactual replay of ``{replay_of}{i}``.
    """
    n = quality.size
    signal = (1 - decoupling) * quality + decoupling * rng.normal(size=n)
    csat = 3.5 + 0.5 * signal + rng.normal(0, 0.3, n) + gaming * PROXY_SD
    p_true = 1 / (1 + np.exp(-(1.5 + quality))) - true_drop
    resolved = (rng.random(n) if draws is None else draws) < p_true
    mix = (1 - collapse) * BASE_MIX + collapse * np.eye(len(DECISIONS))[0]
    decisions = rng.choice(len(DECISIONS), size=n, p=mix)
    return [
        TraceRecord(
            trace_id=f"{prefix}{i}",
            agent="support",
            agent_version="v2",
            started_at=t0 + i,
            ended_at=t0 + i + 1,
            source=source,
            counterfactual_of=None if replay_of is None else f"{replay_of}{i}",
            attributes={"decision": DECISIONS[decisions[i]]},
            scores=(
                Score("csat", float(csat[i]), "proxy", "online"),
                Score("resolved", float(resolved[i]), "true", "delayed", t0 + i + 100),
                Score("no_pii", 1.0, "guardrail", "online"),
            ),
        )
        for i in range(n)
    ]


def scenario(
    seed: int,
    *,
    n: int = 400,
    pairs: int = 0,
    pair_gaming: float = 0.0,
    pair_true_drop: float = 0.0,
    **effects: float,
) -> tuple[list[TraceRecord], list[TraceRecord]]:
    rng = np.random.default_rng(seed)
    q_ref, u_ref = rng.normal(size=n), rng.random(n)
    reference = batch(rng, "r", 0.0, q_ref, draws=u_ref)
    current = batch(rng, "c", 1e4, rng.normal(size=n), **effects)
    # counterfactual replays of reference inputs by the current policy (shadow traffic)
    current += batch(
        rng,
        "cf",
        2e4,
        q_ref[:pairs],
        gaming=pair_gaming,
        true_drop=pair_true_drop,
        draws=u_ref[:pairs],
        replay_of="r",
        source="shadow",
    )
    return reference, current


MODERATE = {"gaming": 0.4, "true_drop": 0.1, "decoupling": 0.5, "collapse": 0.35}
DETECTOR = ProxyConvergenceDetector(n_permutations=499)


def test_quiet_on_stationary_windows() -> None:
    fires = sum(DETECTOR.test(*scenario(seed, pairs=60)).fired for seed in range(50))
    assert fires <= 2  # here 0 / 50; 0 / 200 other seeds


def test_fires_on_moderate_proxy_convergence() -> None:
    results = [
        DETECTOR.test(*scenario(100 + s, pairs=60, pair_gaming=0.4, pair_true_drop=0.1, **MODERATE))
        for s in range(20)
    ]
    assert sum(r.fired for r in results) >= 18  # here 20 / 20; 100 / 100 other seeds
    r = results[0]
    assert r.status == "ok" and r.failure_mode == "FM-7"
    assert r.statistic >= r.threshold and r.p_value is not None and r.p_value <= 0.01
    assert [row["name"] for row in r.evidence["proxy_rose"]] == ["csat"]
    assert [row["name"] for row in r.evidence["true_fell"]] == ["resolved"]
    assert r.evidence["proxy_rose"][0]["change"] > 0 > r.evidence["true_fell"][0]["change"]
    assert "csat rose" in r.evidence["summary"] and "resolved fell" in r.evidence["summary"]
    assert "no_pii" not in r.evidence["objectives"]  # guardrails are not objectives


def test_sources_choose_the_traffic_that_is_trended() -> None:
    reference, current = scenario(100, pairs=60, pair_gaming=0.4, pair_true_drop=0.1, **MODERATE)

    def as_shadow(window: list[TraceRecord]) -> list[TraceRecord]:
        # Production and shadow swapped: the counterfactual replays become "production".
        swap = {"production": "shadow", "shadow": "production"}
        return [replace(t, source=swap.get(t.source, t.source)) for t in window]

    shadow = replace(DETECTOR, sources=["shadow"])
    assert shadow.test(as_shadow(reference), as_shadow(current)) == DETECTOR.test(
        reference, current
    )


def test_trend_alone_fires() -> None:
    results = [DETECTOR.test(*scenario(200 + s, gaming=0.4, true_drop=0.15)) for s in range(20)]
    assert sum("trend" in r.evidence["fired_subtests"] for r in results) >= 18


@pytest.mark.parametrize(
    "effects",
    [{"gaming": 0.6}, {"true_drop": 0.12}, {"gaming": 0.6, "true_drop": -0.05}],
    ids=["proxy_up_only", "true_down_only", "genuine_improvement"],
)
def test_one_sided_movement_is_not_proxy_convergence(effects: dict[str, float]) -> None:
    fires = sum(DETECTOR.test(*scenario(300 + s, **effects)).fired for s in range(20))
    assert fires <= 1


def test_correlation_decay_is_reported() -> None:
    r = DETECTOR.test(*scenario(400, gaming=0.4, decoupling=0.8))
    row = r.evidence["correlations"][0]
    assert (row["proxy"], row["true"]) == ("csat", "resolved")
    assert row["rho_reference"] - row["rho_current"] > 0.2
    assert "decoupling" in r.evidence["fired_subtests"]


def test_counterfactual_pairs_alone_fire() -> None:
    results = [
        DETECTOR.test(*scenario(500 + s, pairs=150, pair_gaming=0.4, pair_true_drop=0.1))
        for s in range(20)
    ]
    assert sum(r.fired for r in results) >= 18
    cf = results[0].evidence["subtests"]["counterfactual"]
    assert cf["fired"] and cf["n_pairs"] == 150
    assert cf["objectives"]["csat"]["mean_difference"] > 0
    assert cf["objectives"]["resolved"]["mean_difference"] < 0
    assert "trend" not in results[0].evidence["fired_subtests"]


def test_diversity_collapse_alone_fires() -> None:
    results = [DETECTOR.test(*scenario(600 + s, collapse=0.35)) for s in range(20)]
    assert sum(r.fired for r in results) >= 18
    div = results[0].evidence["subtests"]["diversity"]
    assert div["entropy_current"] < div["entropy_reference"] - 0.1
    assert div["top_decision_current"]["decision"] == "refund"


def strip(
    traces: list[TraceRecord],
    *,
    keep: tuple[str, ...],
    const: bool = False,
    decisions: bool = False,
) -> list[TraceRecord]:
    return [
        TraceRecord(
            t.trace_id,
            t.agent,
            t.agent_version,
            t.started_at,
            t.ended_at,
            attributes=t.attributes if decisions else {},
            scores=tuple(
                Score(s.name, 1.0 if const else s.value, s.kind, s.source)
                for s in t.scores
                if s.name in keep
            ),
        )
        for t in traces
    ]


@pytest.mark.parametrize(
    "case",
    ["empty", "one_trace", "constant_scores", "nan_scores", "proxy_only", "no_scores_one_decision"],
)
def test_degenerate_input_is_insufficient(case: str) -> None:
    reference, current = scenario(7, n=100, **MODERATE)
    if case == "empty":
        reference, current = [], []
    elif case == "one_trace":
        reference, current = reference[:1], current[:1]
    elif case == "constant_scores":
        reference = strip(reference, keep=("csat", "resolved"), const=True)
        current = strip(current, keep=("csat", "resolved"), const=True)
    elif case == "nan_scores":
        nan = float("nan")
        reference, current = (
            [
                TraceRecord(
                    t.trace_id,
                    t.agent,
                    scores=tuple(Score(s.name, nan, s.kind, s.source) for s in t.scores),
                )
                for t in w
            ]
            for w in (reference, current)
        )
    elif case == "proxy_only":
        reference, current = strip(reference, keep=("csat",)), strip(current, keep=("csat",))
    elif case == "no_scores_one_decision":
        one = {"decision": "refund"}
        reference = [TraceRecord(f"r{i}", "a", attributes=one) for i in range(50)]
        current = [TraceRecord(f"c{i}", "a", attributes=one) for i in range(50)]
    r = DETECTOR.test(reference, current)
    assert r.status == "insufficient_data" and not r.fired and r.evidence["reason"]


def test_shadow_runs_are_not_trend_traffic() -> None:
    reference, current = scenario(8, n=100, pairs=60, pair_gaming=1.0, pair_true_drop=0.3)
    r = DETECTOR.test(reference, current)
    assert r.evidence["objectives"]["csat"]["n_current"] == 100


def test_holm_adjustment() -> None:
    assert holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert holm([]).size == 0


def test_normalised_entropy() -> None:
    assert normalised_entropy(np.array([5, 5, 5, 5])) == pytest.approx(1.0)
    assert normalised_entropy(np.array([9, 0, 0])) == pytest.approx(0.0)


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("alpha", 0.0),
        ("alpha", 1.0),
        ("min_effect", -1.0),
        ("min_correlation_drop", 3.0),
        ("min_entropy_drop", float("nan")),
        ("min_traces", 2),
        ("min_pairs", 1.5),
        ("n_permutations", 10),
    ],
)
def test_invalid_parameters_name_the_parameter(param: str, value: float) -> None:
    with pytest.raises(ValueError, match=param):
        ProxyConvergenceDetector(**{param: value})
