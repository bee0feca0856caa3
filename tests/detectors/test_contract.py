"""The contract every registered detector keeps, FM-1 ... FM-7 and OUTCOME alike.

Built by ``build_detector(mode, params)``, called ``test(reference, current, *, now)``,
parameters refused by name, needs declared from :mod:`detectors.needs`, a filled frozen
result, quiet on stationary seeded data, and ``insufficient_data`` never firing.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
from typing import Any

import numpy as np
import pytest

from detectors.drift import mmd_drift
from detectors.issue_rates import IssueCount
from detectors.needs import NEEDS
from detectors.registry import (
    DETECTORS,
    DetectorParameterError,
    build_detector,
    detector_parameters,
)
from detectors.result import DetectorResult
from detectors.significance import stop_after_for
from detectors.silence import ArrivalCount
from tests.detectors.test_registry import rich_traces

MODES = ("FM-1", "FM-2", "FM-3", "FM-4", "FM-5", "FM-6", "FM-7", "OUTCOME", "SILENCE", "EARLY",
         "JUDGE", "ISSUES")  # fmt: skip
NOW = 10_000.0
# One value per mode that its detector must refuse, named in the error.
OUT_OF_RANGE = {
    "FM-1": ("min_ratio", 0.5),
    "FM-2": ("min_lift", 0.5),
    "FM-3": ("min_groups", 1),
    "FM-4": ("n_bootstrap", 10),
    "FM-5": ("min_versions", 2),
    "FM-6": ("method", "lsh"),
    "FM-7": ("min_pairs", 1),
    "OUTCOME": ("min_labels", 1),
    "SILENCE": ("max_ratio", 1.5),
    "EARLY": ("latency_factor", 0.5),
    "JUDGE": ("min_pairs", 1),
    "ISSUES": ("min_ratio", 0.5),
}


def streams(seed: int, n: int = 200) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.normal(size=(n, 8)).astype(np.float32) for name in ("vlm.image", "vlm.text")}


def arrivals(seed: int) -> list[ArrivalCount]:
    """SILENCE's comparisons: counts and shares now and a day and a week back, one law."""
    rng = np.random.default_rng(seed)
    out = []
    for agent, rate in (("a", 20.0), ("b", 60.0)):
        for window_s in (900.0, 3600.0):
            lam = rate * window_s / 900.0
            k, k_day, k_week = (int(x) for x in rng.poisson(lam, 3))
            out.append(ArrivalCount("traffic", agent, window_s, k, k_day, 900.0 * window_s / 900,
                                    same_hour=True, more_refs=((k_week, window_s),)))  # fmt: skip
            n, n_ref = k, k_day + k_week
            out.append(ArrivalCount("content", agent, window_s, int(rng.binomial(n, 0.9)),
                                    int(rng.binomial(n_ref, 0.9)), kind="share", n=n,
                                    n_ref=n_ref))  # fmt: skip
    return out


def issue_counts(seed: int) -> tuple[list[IssueCount], list[IssueCount]]:
    """ISSUES' windows: 30 issues of two agents hitting traces at steady rates, a day
    against an hour."""
    rng = np.random.default_rng(seed)
    out: tuple[list[IssueCount], list[IssueCount]] = ([], [])
    for window, traces in ((out[0], 2400), (out[1], 100)):
        for i in range(30):
            agent = "a" if i % 2 else "b"
            hit = int(rng.binomial(traces, 0.002 * (1 + i % 5)))
            window.append(IssueCount(i + 1, f"error {i}", f"tool{i}", agent, "E", hit, traces))
    return out


def windows(mode: str, seed: int) -> tuple[Any, Any]:
    """Stationary seeded windows: the reference and current come from the same law."""
    if mode == "FM-6":
        return streams(2 * seed), streams(2 * seed + 1)
    if mode == "SILENCE":
        return [], arrivals(seed)
    if mode == "ISSUES":
        return issue_counts(seed)
    return rich_traces(200, 2 * seed, "r"), rich_traces(200, 2 * seed + 1, "c")


def empty_windows(mode: str) -> tuple[Any, Any]:
    if mode == "FM-6":
        return {}, {}
    return [], []


def test_every_mode_is_registered() -> None:
    assert tuple(DETECTORS) == MODES


@pytest.mark.parametrize("mode", MODES)
def test_called_one_way_with_declared_needs(mode: str) -> None:
    detector = build_detector(mode)
    params = inspect.signature(detector.test).parameters
    assert list(params)[:2] == ["reference", "current"]
    assert params["now"].kind is inspect.Parameter.KEYWORD_ONLY
    assert isinstance(detector.needs, tuple) and detector.needs
    assert set(detector.needs) <= set(NEEDS), set(detector.needs) - set(NEEDS)
    # What the service does for a mode it reads from the class, never from the mode's name.
    cls = type(detector)
    assert "window_counts" in vars(cls) and "checks_silence" in vars(cls)
    assert set(cls.window_counts) <= {"labels"} and isinstance(cls.checks_silence, bool)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", [0, 1])
def test_stationary_data_is_quiet_and_the_result_filled(mode: str, seed: int) -> None:
    reference, current = windows(mode, seed)
    result = build_detector(mode).test(reference, current, now=NOW)
    assert isinstance(result, DetectorResult)
    assert result.failure_mode == mode and result.status == "ok"
    assert result.fired is False
    assert isinstance(result.statistic, float) and isinstance(result.threshold, float)
    assert math.isfinite(result.threshold)
    assert result.p_value is not None and 0.0 <= result.p_value <= 1.0
    assert result.evidence and json.dumps(dict(result.evidence), default=str)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.fired = True  # type: ignore[misc]


@pytest.mark.parametrize("mode", MODES)
def test_insufficient_data_never_fires(mode: str) -> None:
    reference, _ = windows(mode, 0)
    for ref, cur in (empty_windows(mode), (reference, empty_windows(mode)[1])):
        result = build_detector(mode).test(ref, cur, now=NOW)
        assert result.status == "insufficient_data" and result.fired is False
        assert result.failure_mode == mode and result.evidence["reason"]


@pytest.mark.parametrize("mode", MODES)
def test_parameters_are_validated_by_name(mode: str) -> None:
    assert detector_parameters(mode)["alpha"] == 0.01
    with pytest.raises(DetectorParameterError, match="unknown parameter 'alpah'") as unknown:
        build_detector(mode, {"alpah": 0.05})
    assert unknown.value.parameter == "alpah"
    name, bad = OUT_OF_RANGE[mode]
    assert name in detector_parameters(mode)
    for params in ({"alpha": 2.0}, {name: bad}):
        with pytest.raises(ValueError, match=next(iter(params))) as refused:
            build_detector(mode, params)
        assert refused.value.parameter == next(iter(params))  # type: ignore[attr-defined]


def test_fm6_is_one_bonferroni_test_per_stream() -> None:
    """The registered FM-6 detector is the per-stream test at alpha / k, reported as is."""
    ref, cur = streams(0), streams(1)
    cur["vlm.image"] = cur["vlm.image"] * 0.6  # one stream drifts
    result = build_detector("FM-6", {"method": "mmd", "alpha": 0.01}).test(ref, cur, now=NOW)
    # With the sequential stop the detector uses (h exceedances at alpha / k).
    h = stop_after_for(0.005, 200)
    by_hand = {
        s: mmd_drift(ref[s], cur[s], alpha=0.005, n_permutations=200, stop_after=h) for s in ref
    }
    assert result.fired and result.evidence["most_drifted_stream"] == "vlm.image"
    assert result.statistic == by_hand["vlm.image"].statistic
    assert result.p_value == min(1.0, 2 * by_hand["vlm.image"].p_value)
    for s, r in by_hand.items():
        assert result.evidence["streams"][s]["fired"] == r.fired
        assert result.evidence["streams"][s]["p_value"] == r.p_value
