"""Detector parameters: declared with bounds, checked and cast once, refused by name."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from detectors.params import DetectorParameterError, parameter_defaults
from detectors.registry import DETECTORS, build_detector
from detectors.window_permutation import WindowTest

TRACE_MODES = [mode for mode in DETECTORS if mode not in ("FM-6", "SILENCE", "ISSUES")]


@pytest.mark.parametrize("mode", list(DETECTORS))
def test_a_detector_is_a_frozen_dataclass_of_its_parameters(mode: str) -> None:
    detector = build_detector(mode, {"alpha": 0.02})
    assert dataclasses.is_dataclass(detector)
    with pytest.raises(dataclasses.FrozenInstanceError):
        detector.alpha = 0.5  # type: ignore[misc]
    # Rebuilt from its config: the parameters are the fields.
    config = {name: getattr(detector, name) for name in parameter_defaults(type(detector))}
    assert build_detector(mode, config) == detector


@pytest.mark.parametrize("mode", TRACE_MODES)
def test_every_trace_detector_reads_its_sources(mode: str) -> None:
    detector = build_detector(mode)
    assert parameter_defaults(type(detector))["sources"] == ("production",)
    assert detector.sources == frozenset({"production"})
    for bad in ("production", [], ["prod"]):
        with pytest.raises(DetectorParameterError) as refused:
            build_detector(mode, {"sources": bad})
        assert refused.value.parameter == "sources"


@pytest.mark.parametrize(
    ("mode", "sources", "allowed"),
    [
        ("FM-4", ["shadow"], False),  # the service counts labels over production only
        ("FM-5", ["eval"], False),  # eval runs are the other side of every FM-5 test
        ("FM-5", ["production", "shadow"], True),
        ("FM-7", ["eval"], True),
        ("OUTCOME", ["shadow"], True),
    ],
)
def test_sources_a_mode_structurally_needs(mode: str, sources: list[str], allowed: bool) -> None:
    if allowed:
        assert build_detector(mode, {"sources": sources}).sources == frozenset(sources)
        return
    with pytest.raises(DetectorParameterError, match="sources must be some of"):
        build_detector(mode, {"sources": sources})


@pytest.mark.parametrize(
    ("params", "name", "message"),
    [
        ({"min_traces": 2.5}, "min_traces", "min_traces must be an integer >= 2, got 2.5"),
        ({"min_traces": True}, "min_traces", "min_traces must be an integer >= 2"),
        ({"alpha": "0.05"}, "alpha", "alpha must be in (0.0, 1.0), got '0.05'"),
        ({"min_ratio": math.nan}, "min_ratio", "min_ratio must be >= 1.0, got nan"),
        ({"low_confidence": 1.0}, "low_confidence", "must be in (0.0, 1.0), got 1.0"),
        ({"seed": -1}, "seed", "seed must be an integer >= 0"),
        ({"n_permutations": 50}, "n_permutations", "n_permutations too small for alpha"),
    ],
)
def test_a_refusal_names_the_field(params: dict[str, Any], name: str, message: str) -> None:
    with pytest.raises(DetectorParameterError) as refused:
        build_detector("FM-1", params)
    assert refused.value.parameter == name
    assert message in str(refused.value)


def test_values_are_cast_to_the_declared_type() -> None:
    detector = build_detector("FM-1", {"min_traces": 40.0, "min_ratio": 2, "seed": 2**62 + 1})
    assert detector.min_traces == 40 and isinstance(detector.min_traces, int)
    assert detector.min_ratio == 2.0 and isinstance(detector.min_ratio, float)
    assert detector.seed == 2**62 + 1  # an integer seed is kept as is, not rounded
    with pytest.raises(DetectorParameterError, match="must be a bool"):
        build_detector("FM-5", {"fire_on_coverage": 1})
    with pytest.raises(DetectorParameterError, match="method must be one of 'cosine', 'mmd'"):
        build_detector("FM-6", {"method": "lsh"})


def test_window_tests_share_one_declaration() -> None:
    for mode in ("FM-1", "FM-2", "FM-3"):
        cls = DETECTORS[mode]
        assert issubclass(cls, WindowTest)
        assert {"alpha", "n_permutations", "seed", "sources"} <= set(parameter_defaults(cls))
