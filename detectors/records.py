"""The shapes the trace failure-mode detectors read, and the one mapping from stored rows.

:func:`from_rows` turns stored rows (plain mappings: the database's columns in ``app/``, the
native ingest event bodies in ``pipelines.scenarios``) into :class:`TraceRecord` values, so
the monitors and the benches see the same records for the same data. Detectors never see
rows or sessions: only these frozen dataclasses and numpy arrays. The result type they
return is :class:`detectors.result.DetectorResult` (re-exported here).

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
  ``<agent>.output`` and ``<agent>.input``;
* *steps* are the agent's actions, not the wrapper spans around them nor the spans inside
  one (:mod:`detectors.agent_steps`, read from ``span_id`` / ``parent_span_id``); a trace
  without tool spans gets a tool step for each call its LLM steps requested
  (:mod:`detectors.requested_tools`);
* *step order*: spans sort by ``step_index``, spans without one after every indexed span,
  then by start time, then by ``span_id``; ``Step.index`` is the position in that order
  (0, 1, 2, ... with no gaps), see :func:`detectors.stored_times.step_order_key`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from detectors.agent_steps import agent_steps
from detectors.requested_tools import with_requested_calls
from detectors.result import DetectorResult
from detectors.stored_times import epoch_seconds, step_order_key

__all__ = [
    "DetectorResult",
    "Score",
    "Step",
    "TraceRecord",
    "TraceWindow",
    "from_rows",
    "is_tool_step",
    "step_error",
]

LABEL_SOURCES = ("delayed", "human")
# Where a trace comes from: live traffic, an eval harness run, or a shadow replay.
TRACE_SOURCES = ("production", "eval", "shadow")


@dataclass(frozen=True, slots=True)
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
    # A model call's tokens (total, else input + output) and cost in USD, where known.
    tokens: int | None = None
    cost: float | None = None

    @property
    def failed(self) -> bool:
        return self.status == "error"

    @property
    def latency_s(self) -> float:
        return max(0.0, self.ended_at - self.started_at)


@dataclass(frozen=True, slots=True)
class Score:
    """A score of a trace; ``label_source`` says whether its source counts as a ground-truth
    label source (a project's score roles decide; None: the defaults, ``LABEL_SOURCES``).

    ``predicts`` names the ``true`` objective a judge's score predicts (an online
    evaluator's config says it): such a score is a measurement of that objective, never a
    label of it nor an objective of its own; OUTCOME corrects it with the objective's
    labels by prediction-powered inference (:mod:`detectors.outcome_judged`).

    >>> Score("resolved", 1.0, "true", "online").is_label
    False
    >>> Score("resolved", 1.0, "true", "online", label_source=True).is_label
    True
    >>> Score("judge_resolved", 1.0, "true", "human", predicts="resolved").is_label
    False
    """

    name: str
    value: float
    kind: str = "proxy"  # proxy | true | guardrail
    source: str = "online"  # online | delayed | human | eval
    created_at: float = 0.0
    label_source: bool | None = None
    predicts: str | None = None

    @property
    def is_label(self) -> bool:
        if self.kind != "true" or self.predicts is not None:
            return False
        return self.source in LABEL_SOURCES if self.label_source is None else self.label_source


@dataclass(frozen=True, slots=True)
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
    # Its longest run of one tool called with the same arguments, found when the trace was
    # derived (app/derive/loops.py): the identical calls (None: not derived for loops) and
    # the tool when that run is a loop.
    loop_calls: int | None = None
    loop_tool: str | None = None

    @property
    def has_loop(self) -> bool:
        return self.loop_tool is not None

    @property
    def tokens(self) -> int | None:
        """Its model calls' tokens (None: no call carries a count). Summed over the steps,
        so a framework's LLM span around the provider's span for one call counts once."""
        counts = [s.tokens for s in self.steps if s.kind == "llm" and s.tokens is not None]
        return sum(counts) if counts else None

    @property
    def cost(self) -> float | None:
        """Its model calls' cost in USD (None: no call carries one)."""
        costs = [s.cost for s in self.steps if s.kind == "llm" and s.cost is not None]
        return float(sum(costs)) if costs else None

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


# What a trace detector's ``test`` compares: a window's records (the service's windows
# may also carry counts over every trace of a sampled window: detectors.step_profiles).
TraceWindow = Sequence[TraceRecord]

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


# A monitor's window holds tens of thousands of traces of ~7 steps each, whose kinds, names,
# statuses and tool names repeat: one shared copy of each string (``sys.intern``) and one
# read-only empty mapping for every step without attributes: two 20,000-trace windows of
# bench/scale's traffic (140k steps each) took 371 MB resident instead of 464 MB.
_NO_ATTRIBUTES: Mapping[str, Any] = MappingProxyType({})


def _shared(value: Any, default: str = "") -> str:
    return sys.intern(str(value)) if value else default


def _shared_or_none(value: Any) -> str | None:
    return None if value is None else sys.intern(str(value))


def _attributes(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return dict(value) if value else _NO_ATTRIBUTES


def from_rows(
    traces: Iterable[Mapping[str, Any]],
    spans: Iterable[Mapping[str, Any]] = (),
    scores: Iterable[Mapping[str, Any]] = (),
    embeddings: Iterable[Mapping[str, Any]] = (),
    known_steps: Mapping[str, tuple[Step, ...]] | None = None,
) -> list[TraceRecord]:
    """Stored trace, span, score and embedding rows -> records, oldest first.

    Rows are mappings with the stored column names (``trace_id`` on every row; times as
    epoch seconds, ``datetime`` or ISO-8601). Steps follow :func:`step_order_key` and are
    numbered 0, 1, ... in that order; a score without ``created_at`` takes its trace's end
    time, and its optional ``label_source`` and ``predicts`` become
    :attr:`Score.label_source` and :attr:`Score.predicts`; an embedding row (``trace_id``,
    ``stream``, ``vector``) in the stream
    ``<agent>.input`` / ``<agent>.output`` of its trace's agent becomes the input / output
    embedding (the last such row wins). Rows of unknown traces are dropped; a trace row
    repeated replaces the earlier one. Records sort by ``(started_at, trace_id)``.
    ``known_steps``: traces whose steps were mapped before from the same spans (a caller
    that keeps them); their span rows are not needed.

    Examples
    --------
    >>> recs = from_rows(
    ...     [{"trace_id": "t1", "agent": "bot", "started_at": 0.0, "ended_at": 2.0}],
    ...     spans=[{"trace_id": "t1", "span_id": "s2", "step_index": None, "kind": "llm"},
    ...            {"trace_id": "t1", "span_id": "s1", "step_index": 3, "kind": "tool"}],
    ...     scores=[{"trace_id": "t1", "name": "resolved", "value": 1, "kind": "true"}],
    ...     embeddings=[{"trace_id": "t1", "stream": "bot.output", "vector": [0.6, 0.8]}],
    ... )
    >>> [(s.index, s.kind) for s in recs[0].steps], recs[0].scores[0].created_at
    ([(0, 'tool'), (1, 'llm')], 2.0)
    >>> recs[0].output_embedding.tolist() == [0.6000000238418579, 0.800000011920929]
    True
    """
    by_id = {str(t["trace_id"]): t for t in traces}
    span_rows: dict[str, list[Mapping[str, Any]]] = {tid: [] for tid in by_id}
    score_rows: dict[str, list[Mapping[str, Any]]] = {tid: [] for tid in by_id}
    vectors: dict[tuple[str, str], np.ndarray] = {}
    for row in spans:
        span_rows.get(str(row["trace_id"]), []).append(row)
    for row in scores:
        score_rows.get(str(row["trace_id"]), []).append(row)
    for row in embeddings:
        tid = str(row["trace_id"])
        trace = by_id.get(tid)
        if trace is None:
            continue
        agent, _, side = str(row["stream"]).rpartition(".")
        if agent == str(trace["agent"]) and side in ("input", "output"):
            vectors[(tid, side)] = np.asarray(row["vector"], dtype=np.float32)
    known = known_steps or {}
    out = [
        _record(tid, t, span_rows[tid], score_rows[tid], vectors, known.get(tid))
        for tid, t in by_id.items()
    ]
    out.sort(key=lambda r: (r.started_at, r.trace_id))
    return out


def _record(
    tid: str,
    t: Mapping[str, Any],
    spans: list[Mapping[str, Any]],
    scores: list[Mapping[str, Any]],
    vectors: Mapping[tuple[str, str], np.ndarray],
    steps: tuple[Step, ...] | None = None,
) -> TraceRecord:
    ended = epoch_seconds(t.get("ended_at"))
    return TraceRecord(
        trace_id=tid,
        agent=_shared(t["agent"]),
        agent_version=_shared(t.get("agent_version")),
        started_at=epoch_seconds(t.get("started_at")),
        ended_at=ended,
        status=_shared(t.get("status"), "ok"),
        input_hash=t.get("input_hash"),
        entry_point=_shared_or_none(t.get("entry_point")),
        source=_shared(t.get("source"), "production"),
        counterfactual_of=t.get("counterfactual_of"),
        attributes=_attributes(t.get("attributes")),
        steps=_steps(spans) if steps is None else steps,
        scores=tuple(
            Score(
                name=_shared(s["name"]),
                value=float(s["value"]),
                kind=_shared(s.get("kind"), "proxy"),
                source=_shared(s.get("source"), "online"),
                created_at=epoch_seconds(s.get("created_at"), ended),
                label_source=s.get("label_source"),
                predicts=_shared_or_none(s.get("predicts")),
            )
            for s in scores
        ),
        input_embedding=vectors.get((tid, "input")),
        output_embedding=vectors.get((tid, "output")),
        loop_calls=None if t.get("loop_calls") is None else int(t["loop_calls"]),
        loop_tool=_shared_or_none(t.get("loop_tool")),
    )


def _steps(spans: list[Mapping[str, Any]]) -> tuple[Step, ...]:
    kept = agent_steps(sorted(spans, key=step_order_key))
    inherited = {id(s) for s, from_child in kept if from_child}
    rows = with_requested_calls([s for s, _ in kept])
    return tuple(_step(i, s, id(s) in inherited) for i, s in enumerate(rows))


def _step(index: int, s: Mapping[str, Any], error_inherited: bool = False) -> Step:
    confidence = s.get("confidence")
    return Step(
        index=index,
        kind=_shared(s.get("kind"), "step"),
        name=_shared(s.get("name")),
        status="ok" if error_inherited else _shared(s.get("status"), "ok"),
        tool_name=_shared_or_none(s.get("tool_name")),
        error_type=None if error_inherited else _shared_or_none(s.get("error_type")),
        started_at=epoch_seconds(s.get("started_at")),
        ended_at=epoch_seconds(s.get("ended_at")),
        confidence=None if confidence is None else float(confidence),
        attributes=_attributes(s.get("attributes")),
        tokens=_tokens(s),
        cost=None if s.get("cost") is None else float(s["cost"]),
    )


def _tokens(s: Mapping[str, Any]) -> int | None:
    """``total_tokens``, else input + output where either is known (as the rollups count)."""
    if s.get("total_tokens") is not None:
        return int(s["total_tokens"])
    parts = [s.get("input_tokens"), s.get("output_tokens")]
    return sum(int(v) for v in parts if v is not None) if any(v is not None for v in parts) else None
