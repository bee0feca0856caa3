"""FM-3 detector: calibration on clean data, power per sub-test, degenerate input."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from detectors.output_drift import (
    OutputDriftDetector,
    _group_counts,
    _groups,
    pair_disagreement,
)
from detectors.records import TraceRecord
from detectors.window_permutation import window_permutation_test

DECISIONS = ("approve", "deny", "escalate")
ENTRY_POINTS = ("api", "chat", "batch")


def make_window(
    rng: np.random.Generator,
    n_inputs: int = 120,
    *,
    flip: float = 0.08,
    chat_shift: float = 0.0,
    emb_noise: float = 0.15,
    prefix: str = "t",
) -> list[TraceRecord]:
    """Each input is sent 2-5 times through random entry points.

    A trace returns the input's usual decision unless it flips (rate ``flip`` scaled by
    the input's own ambiguity, a Beta frailty). For a fraction ``chat_shift`` of inputs the
    ``chat`` entry point's usual decision is a different one. Its 16-d output embedding is
    the (input, decision) centroid plus Gaussian noise ``emb_noise``.
    """
    ambiguity = rng.beta(2, 2, n_inputs) * 2
    centroids = rng.normal(0, 1, (n_inputs, len(DECISIONS), 16))
    traces = []
    for i in range(n_inputs):
        usual = int(rng.integers(len(DECISIONS)))
        shifted = rng.random() < chat_shift
        for k in range(int(rng.integers(2, 6))):
            entry = ENTRY_POINTS[int(rng.integers(3))]
            d = (usual + 1) % 3 if shifted and entry == "chat" else usual
            if rng.random() < flip * ambiguity[i]:
                d = int(rng.integers(len(DECISIONS)))
            emb = centroids[i, d] + rng.normal(0, emb_noise, 16)
            traces.append(
                TraceRecord(
                    f"{prefix}{i}-{k}",
                    "agent",
                    "v1",
                    input_hash=f"h{i}",
                    entry_point=entry,
                    attributes={"decision": DECISIONS[d]},
                    output_embedding=emb,
                )  # fmt: skip
            )
    return traces


def fire_rates(trials: int, seed: int, n_inputs: int = 120, **kwargs: Any) -> dict[str, float]:
    detector = OutputDriftDetector(n_permutations=499)
    fired, sub = 0, dict[str, int]()
    for k in range(trials):
        rng = np.random.default_rng([seed, k])
        reference = make_window(rng, n_inputs, prefix="r")
        result = detector.test(reference, make_window(rng, n_inputs, **kwargs))
        fired += result.fired
        for name, sub_test in result.evidence["sub_tests"].items():
            sub[name] = sub.get(name, 0) + sub_test["fired"]
    return {"any": fired / trials, **{n: v / trials for n, v in sub.items()}}


def test_quiet_on_clean_data() -> None:
    assert fire_rates(50, seed=1)["any"] <= 2 / 50


def test_fires_on_moderate_nondeterminism() -> None:
    # 250 inputs x 2-5 runs; per-run flip rate 8% -> 20% (times each input's ambiguity):
    # pair disagreement about 0.09 -> 0.23.
    rates = fire_rates(20, seed=2, n_inputs=250, flip=0.2)
    assert rates["decision_disagreement"] >= 0.9
    assert rates["cross_entry_excess"] <= 0.1


def test_fires_on_cross_entry_point_inconsistency() -> None:
    # For 30% of inputs the chat entry point answers differently from api and batch.
    rates = fire_rates(20, seed=3, n_inputs=250, chat_shift=0.3)
    assert rates["cross_entry_excess"] >= 0.9


def test_fires_on_output_embedding_spread_with_same_decisions() -> None:
    rates = fire_rates(20, seed=4, emb_noise=0.25)
    assert rates["embedding_distance"] >= 0.9
    assert rates["decision_disagreement"] <= 0.1


def _runs(input_hash: str, decisions: list[str], prefix: str) -> list[TraceRecord]:
    return [
        TraceRecord(f"{prefix}{input_hash}-{k}", "agent", "v1", input_hash=input_hash,
                    attributes={"decision": d})
        for k, d in enumerate(decisions)
    ]  # fmt: skip


def test_disagreement_weighs_a_group_by_its_runs_not_its_pairs() -> None:
    # One input run 40 times (780 pairs, 400 disagreeing) beside 20 inputs run 3 times
    # (3 pairs each, 2 disagreeing): pooled pairs the big group decides the rate; weighted
    # by n - 1 (39 against 20 x 2) it is one group among 21.
    window = _runs("big", ["yes", "no"] * 20, "c") + [
        t for i in range(20) for t in _runs(f"s{i}", ["yes", "yes", "no"], "c")
    ]
    ev = OutputDriftDetector().test(window, window).evidence
    assert ev["pair_disagreement"] == pytest.approx((400 + 20 * 2) / (780 + 20 * 3))
    assert ev["decision_disagreement"] == pytest.approx((39 * 400 / 780 + 40 * 2 / 3) / 79)


def test_small_groups_turning_inconsistent_fire_beside_a_big_steady_one() -> None:
    # The most repeated input (24 runs, 276 pairs) stays a coin flip; each of 40 other
    # inputs, run 2-3 times, goes from always agreeing to disagreeing in about half of its
    # pairs. Pooled pairs, the big group's draw decides the permutations (p 0.1 here);
    # weighted by runs the change is plain.
    rng = np.random.default_rng(0)

    def window(flip: float, prefix: str) -> list[TraceRecord]:
        out = _runs("big", [str(rng.integers(2)) for _ in range(24)], prefix)
        for i in range(40):
            n = int(rng.integers(2, 4))
            out += _runs(f"s{i}", ["a" if rng.random() >= flip else "b" for _ in range(n)], prefix)
        return out

    reference, current = window(0.0, "r"), window(0.4, "c")
    result = OutputDriftDetector().test(reference, current)
    assert result.fired and result.p_value is not None and result.p_value <= 0.001

    def counts(w: list[TraceRecord]) -> np.ndarray:
        return np.array([_group_counts(g) for g in _groups(w).values()])

    _, p_pairs = window_permutation_test(
        counts(current), counts(reference), pair_disagreement, n_permutations=999, seed=0
    )
    assert p_pairs > 0.05


def test_evidence_lists_most_inconsistent_inputs() -> None:
    rng = np.random.default_rng(5)
    result = OutputDriftDetector().test(make_window(rng, prefix="r"), make_window(rng, flip=0.3))
    ev = result.evidence
    assert result.fired and result.statistic == ev["decision_disagreement"] > result.threshold
    top = ev["most_inconsistent_inputs"]
    assert len(top) == 5 and top[0]["disagreement"] >= top[-1]["disagreement"] > 0
    assert set(top[0]) >= {"input_hash", "agent_version", "decisions", "entry_points"}
    assert result.p_value is not None and result.p_value <= 0.01


def test_groups_split_by_agent_version() -> None:
    # The same input answered differently by two versions is a change, not noise.
    window = [
        TraceRecord(f"{v}{i}{k}", "a", v, input_hash=f"h{i}", attributes={"decision": v})
        for v in ("v1", "v2")
        for i in range(30)
        for k in range(2)
    ]
    result = OutputDriftDetector().test(window, window)
    assert result.evidence["decision_disagreement"] == 0.0
    assert result.evidence["groups"] == 60


def test_shadow_replays_and_eval_runs_are_left_out() -> None:
    production = [
        TraceRecord(f"p{i}{k}", "a", "v1", input_hash=f"h{i}", attributes={"decision": "yes"})
        for i in range(30)
        for k in range(2)
    ]
    replays = [
        TraceRecord(f"s{i}", "a", "v1", input_hash=f"h{i}", source=source,
                    attributes={"decision": "no"})
        for i in range(30)
        for source in ("shadow", "eval")
    ]  # fmt: skip
    result = OutputDriftDetector().test(production, production + replays)
    assert result.evidence["decision_disagreement"] == 0.0 and not result.fired


def test_embedding_distance_is_mean_pairwise_cosine_distance() -> None:
    vectors = [np.array([1.0, 0.0]), np.array([0.0, 2.0]), np.array([-1.0, 0.0])]
    window = [
        TraceRecord(f"t{i}{k}", "a", input_hash=f"h{i}", output_embedding=v)
        for i in range(20)
        for k, v in enumerate(vectors)
    ]
    result = OutputDriftDetector().test(window, window)
    # pairs: (1,0)-(0,2): 1, (1,0)-(-1,0): 2, (0,2)-(-1,0): 1 -> mean 4/3
    assert result.evidence["embedding_distance"] == pytest.approx(4 / 3)
    assert not result.fired and set(result.evidence["sub_tests"]) == {"embedding_distance"}


@pytest.mark.parametrize(
    ("reference", "current"),
    [
        ([], []),
        ([], [TraceRecord("one", "a", input_hash="h", attributes={"decision": "x"})]),
        (
            [TraceRecord(f"r{i}", "a", input_hash=f"h{i // 2}") for i in range(100)],
            [TraceRecord(f"t{i}", "a", input_hash=f"h{i}") for i in range(100)],
        ),
        (
            [],
            [TraceRecord(f"t{i}", "a", input_hash=f"h{i // 2}") for i in range(100)],
        ),
        (
            [TraceRecord(f"r{i}", "a", input_hash=f"h{i // 2}") for i in range(100)],
            [TraceRecord(f"t{i}", "a", input_hash=f"h{i // 2}") for i in range(100)],
        ),
        ([], [TraceRecord(f"t{i}", "a", attributes={"decision": "x"}) for i in range(100)]),
    ],
    ids=["empty", "one-trace", "no-repeats", "no-reference", "no-decisions", "no-input-hash"],
)
def test_degenerate_input_is_insufficient(
    reference: list[TraceRecord], current: list[TraceRecord]
) -> None:
    result = OutputDriftDetector().test(reference, current)
    assert result.status == "insufficient_data" and not result.fired
    assert result.evidence["reason"]


def test_constant_decisions_do_not_fire() -> None:
    window = [
        TraceRecord(f"t{i}{k}", "a", input_hash=f"h{i}", attributes={"decision": "yes"})
        for i in range(40)
        for k in range(3)
    ]
    result = OutputDriftDetector().test(window, window)
    assert result.status == "ok" and not result.fired and result.statistic == 0.0


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"alpha": 1.0}, "alpha"),
        ({"min_groups": 1}, "min_groups"),
        ({"min_disagreement_increase": -0.1}, "min_disagreement_increase"),
        ({"min_distance_increase": 2.0}, "min_distance_increase"),
        ({"n_permutations": 99}, "n_permutations"),
        ({"sources": ()}, "sources"),
    ],
)
def test_parameters_are_validated(kwargs: dict[str, float], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        OutputDriftDetector(**kwargs)  # type: ignore[arg-type]
