"""The shapes the trace failure-mode detectors read, and the result they return.

``app/`` builds these from stored rows; ``pipelines.scenarios`` builds them from the native
ingest events it generates (so benches need no database). Detectors never see rows or
sessions: only these frozen dataclasses and numpy arrays.

Conventions shared by the ingest contract, the scenario generator and the detectors:

* times are float epoch seconds (UTC);
* a trace's final *decision* (the categorical output FM-3 and FM-7 compare) is the trace
  attribute ``decision``; its *task type* (an FM-4 cohort key) is the attribute ``task_type``;
* the agent's self-reported confidence in its final answer is the trace attribute
  ``confidence`` (else the last step's confidence);
* a *ground-truth label* is a score of kind ``true`` whose source is ``delayed`` or ``human``,
  value 1.0 = correct, 0.0 = wrong; its ``created_at`` gives the label delay;
* *success* of a trace is the ``success`` score (any source) when present, else
  ``status == "ok"``;
* output / input embeddings come from embedding events with ``trace_id`` set, in the streams
  ``<agent>.output`` and ``<agent>.input``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

LABEL_SOURCES = ("delayed", "human")


@dataclass(frozen=True)
class Step:
    """One span of a trace, in step order (``index`` 0 is the first step)."""

    index: int
    kind: str  # agent | llm | tool | retrieval | plan | step
    name: str
    status: str = "ok"  # ok | error
    tool_name: str | None = None
    error_type: str | None = None
    started_at: float = 0.0
    ended_at: float = 0.0
    confidence: float | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.status == "error"

    @property
    def latency_s(self) -> float:
        return max(0.0, self.ended_at - self.started_at)


@dataclass(frozen=True)
class Score:
    name: str
    value: float
    kind: str = "proxy"  # proxy | true | guardrail
    source: str = "online"  # online | delayed | human | eval
    created_at: float = 0.0

    @property
    def is_label(self) -> bool:
        return self.kind == "true" and self.source in LABEL_SOURCES


@dataclass(frozen=True)
class TraceRecord:
    """A trace with its steps, scores and (optional) input/output embeddings."""

    trace_id: str
    agent: str
    agent_version: str = ""
    started_at: float = 0.0
    ended_at: float = 0.0
    status: str = "ok"
    input_hash: str | None = None
    entry_point: str | None = None
    source: str = "production"  # production | eval | shadow
    counterfactual_of: str | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    steps: tuple[Step, ...] = ()
    scores: tuple[Score, ...] = ()
    input_embedding: np.ndarray | None = None
    output_embedding: np.ndarray | None = None

    @property
    def decision(self) -> str | None:
        value = self.attributes.get("decision")
        return None if value is None else str(value)

    @property
    def task_type(self) -> str:
        return str(self.attributes.get("task_type", ""))

    @property
    def confidence(self) -> float | None:
        value = self.attributes.get("confidence")
        if value is not None:
            return float(value)
        for step in reversed(self.steps):
            if step.confidence is not None:
                return step.confidence
        return None

    def score(self, name: str) -> Score | None:
        """The latest score with this name, or None."""
        found = [s for s in self.scores if s.name == name]
        return max(found, key=lambda s: s.created_at) if found else None

    @property
    def label(self) -> Score | None:
        """The ground-truth label (latest delayed/human ``true`` score), if any."""
        labels = [s for s in self.scores if s.is_label]
        return max(labels, key=lambda s: s.created_at) if labels else None

    @property
    def success(self) -> bool:
        s = self.score("success")
        return bool(s.value >= 0.5) if s is not None else self.status == "ok"


@dataclass(frozen=True)
class DetectorResult:
    """What every trace failure-mode detector returns.

    ``status`` is ``"ok"`` or ``"insufficient_data"``; an insufficient result never fires.
    ``evidence`` is a JSON-serialisable dict written for the on-call human.
    """

    failure_mode: str
    statistic: float
    threshold: float
    p_value: float | None
    fired: bool
    evidence: Mapping[str, Any] = field(default_factory=dict)
    status: str = "ok"

    @classmethod
    def insufficient(cls, failure_mode: str, reason: str, **evidence: Any) -> DetectorResult:
        return cls(
            failure_mode=failure_mode,
            statistic=float("nan"),
            threshold=float("nan"),
            p_value=None,
            fired=False,
            evidence={"reason": reason, **evidence},
            status="insufficient_data",
        )


TOOL_KINDS = frozenset({"tool", "retrieval"})


def is_tool_step(step: Step) -> bool:
    """A tool call: a ``tool``/``retrieval`` span, or any span naming a tool."""
    return step.kind in TOOL_KINDS or step.tool_name is not None


def step_error(step: Step) -> bool:
    """Status ``error``, an ``error_type``, or the attribute ``correct`` set to false."""
    attrs = step.attributes
    correct = attrs.get("correct")
    return (
        step.failed
        or step.error_type is not None
        or attrs.get("error_type") is not None
        or correct is False
        or (isinstance(correct, str) and correct.lower() == "false")
    )
