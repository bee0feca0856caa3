"""The detector registry, and a contract every registered trace detector must keep."""

from __future__ import annotations

import dataclasses
import json
import pickle
import subprocess
import sys

import numpy as np
import pytest

from detectors.records import DetectorResult, Score, Step, TraceRecord
from detectors.registry import TRACE_DETECTORS, build_detector, detector_parameters

MODES = ("FM-1", "FM-2", "FM-3", "FM-4", "FM-5", "FM-7", "OUTCOME", "EARLY", "JUDGE")


def test_every_trace_mode_is_registered() -> None:
    assert tuple(TRACE_DETECTORS) == MODES
    names = {mode: cls.__name__ for mode, cls in TRACE_DETECTORS.items()}
    assert names == {
        "FM-1": "CompoundingErrorDetector",
        "FM-2": "ToolCascadeDetector",
        "FM-3": "OutputDriftDetector",
        "FM-4": "GroundTruthAbsenceDetector",
        "FM-5": "EvalOverfittingDetector",
        "FM-7": "ProxyConvergenceDetector",
        "OUTCOME": "OutcomeRegressionDetector",
        "EARLY": "FirstHoursDetector",
        "JUDGE": "JudgeDriftDetector",
    }


@pytest.mark.parametrize("mode", MODES)
def test_build_with_defaults_and_with_params(mode: str) -> None:
    defaults = detector_parameters(mode)
    assert defaults["alpha"] == 0.01
    assert isinstance(build_detector(mode), TRACE_DETECTORS[mode])
    # Every detector that resamples takes a seed; OUTCOME's, EARLY's and JUDGE's tests are
    # exact and take none.
    seeded = {"seed": 3} if "seed" in defaults else {}
    assert ("seed" in defaults) == (mode not in ("OUTCOME", "EARLY", "JUDGE"))
    detector = build_detector(mode, {"alpha": 0.05, **seeded})
    assert detector.alpha == 0.05 and getattr(detector, "seed", 3) == 3


@pytest.mark.parametrize("mode", MODES)
def test_unknown_parameter_is_named(mode: str) -> None:
    with pytest.raises(ValueError, match="unknown parameter 'alpah'"):
        build_detector(mode, {"alpah": 0.05})


@pytest.mark.parametrize("mode", MODES)
def test_out_of_range_value_is_named(mode: str) -> None:
    with pytest.raises(ValueError, match="alpha"):
        build_detector(mode, {"alpha": 2.0})


@pytest.mark.parametrize("mode", ["FM-8", "fm-1", "", None])
def test_unknown_failure_mode(mode: str) -> None:
    with pytest.raises(ValueError, match="unknown failure_mode"):
        build_detector(mode, {})


def test_non_string_parameter_name_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown parameter 1"):
        build_detector("FM-4", {1: 0.5})


def test_the_library_stays_pure() -> None:
    code = (
        "import sys, detectors.registry; "
        "print(sorted(m for m in ('app', 'sqlalchemy', 'fastapi') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def rich_traces(n: int, seed: int, prefix: str) -> list[TraceRecord]:
    """Traces with something for every detector: steps, tools, scores, labels, embeddings."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        steps = tuple(
            Step(
                index=k,
                kind="tool" if k % 2 else "llm",
                name=f"s{k}",
                tool_name="search" if k % 2 else None,
                status="error" if rng.random() < 0.1 else "ok",
                started_at=float(i),
                ended_at=float(i) + 0.5,
                confidence=float(rng.random()),
            )
            for k in range(4)
        )
        resolved = float(rng.random() < 0.8)
        judged = resolved if rng.random() < 0.85 else 1.0 - resolved  # an online judge
        scores = (
            Score("csat", float(rng.normal(4, 0.5)), "proxy"),
            Score("resolved", resolved, "true", "delayed", float(i) + 1.0),
            Score("resolved_judge", judged, "proxy", "online", float(i), predicts="resolved"),
        )
        out.append(
            TraceRecord(
                trace_id=f"{prefix}{i}",
                agent="bot",
                agent_version="v1",
                started_at=float(i),
                ended_at=float(i) + 1.0,
                source="eval" if i % 4 == 0 else "production",
                input_hash=f"h{i % 40}",
                entry_point=("api", "chat")[i % 2],
                attributes={
                    "decision": ("a", "b", "c")[i % 3],
                    "task_type": "t",
                    "confidence": float(rng.random()),
                },
                steps=steps,
                scores=scores,
                input_embedding=rng.normal(size=8),
                output_embedding=rng.normal(size=8),
            )
        )
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", ["empty", "one_trace", "empty_current"])
def test_contract_degenerate_windows_are_insufficient(mode: str, case: str) -> None:
    reference = rich_traces(200, 0, "r")
    if case == "empty":
        reference, current = [], []
    elif case == "one_trace":
        reference, current = reference[:1], rich_traces(1, 1, "c")
    else:
        current = []
    result = build_detector(mode).test(reference, current)
    assert isinstance(result, DetectorResult)
    assert result.failure_mode == mode
    assert result.status == "insufficient_data" and not result.fired
    assert isinstance(result.evidence["reason"], str) and result.evidence["reason"]


@pytest.mark.parametrize("mode", MODES)
def test_contract_result_is_frozen_json_and_reproducible(mode: str) -> None:
    reference, current = rich_traces(200, 0, "r"), rich_traces(200, 1, "c")
    detector = build_detector(mode)
    first = detector.test(reference, current)
    again = pickle.loads(pickle.dumps(detector)).test(reference, current)
    assert first.failure_mode == mode and not first.fired  # same-process windows
    assert json.dumps(first.evidence, default=str)  # JSON-serialisable evidence
    assert json.dumps(dict(first.evidence)) == json.dumps(dict(again.evidence))
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.fired = True  # type: ignore[misc]
