"""Readiness that fits the team's agent: which missing needs are optional, when the traces'
shape cannot feed a detector at all, and remedies in the terms of how the traces arrive.

* **Optional.** A detector runs with part of its needs (``RUNS_WITH`` in
  :mod:`app.monitors.readiness.report`): once the present needs make up one of its sets, a
  missing need only adds a sub-test. It is marked optional, and the monitor reads "ready,
  2 optional missing", not "partly ready".
* **Shape.** A count can say "steps yes 201/201" of an agent whose traces cannot feed the
  detector: FM-1 measures whether a tool call fails more after an earlier failure, leaving
  out the call right after a failed one (FM-2's cascade), so a unit needs a third tool call
  in the trace. Real model calls rarely fail, so its decisions' family says nothing either.
  An agent that makes one tool call a turn then gets a sentence saying so, and its steps
  need is missing, with no remedy to chase.
* **Remedies that feed only this mode.** Score roles are the project's: making a score
  ``true`` to fill an optional need of one mode (FM-2's quality correlation) would turn,
  say, a judge's score into ground truth for FM-4, OUTCOME and FM-7 too. Such a remedy is
  offered only where the need is required, and then names the other modes it changes.
* **Native traces.** Traces that arrived through the native API (no trace in the window
  came through OTLP) are told the native field to send, never an OTel variable or a span
  attribute of an instrumentation they do not run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from app.monitors.readiness.counts import WindowCounts
from detectors import registry

THREE_TOOL_CALLS = 30  # FM-1's min_traces, counted on traces that can give an exposed call
SHAPE_NOTE = (
    "{n} of {m} traces make three or more tool calls. FM-1 asks whether a tool call fails "
    "more after an earlier failure (the call right after a failed one is FM-2's cascade), "
    "so it needs traces with a third call, and model calls rarely fail: an agent that makes "
    "one or two tool calls a turn cannot feed it. FM-2 and OUTCOME watch its failures."
)

# What a trace sent to POST /api/v1/ingest carries instead of an attribute or an
# instrumentation's setting (docs/guides/native-api.md).
NATIVE: dict[str, str] = {
    "steps": "span events (kind llm, tool, plan...) with the trace's trace_id on "
    "POST /api/v1/ingest",
    "step_confidence": '"confidence" (0 to 1) on each llm or agent span event',
    "tool_steps": 'span events with "kind": "tool" and "tool_name" for each tool call',
    "input_hash": '"input_hash" on the trace event (the same value for the same user input)',
    "entry_point": '"entry_point" on the trace event',
    "decision": '"attributes": {"decision": ...} on the trace event',
    "confidence": '"attributes": {"confidence": ...} on the trace event, or "confidence" '
    "on its final span event",
    "eval_traces": '"source": "eval" on the evaluation harness\'s trace events',
    "counterfactual_runs": '"counterfactual_of": <baseline trace id> on the candidate run',
}
OTEL_ONLY = ("instrumentation", "attribute")


def can_run(groups: Sequence[Sequence[str]], present: Iterable[str]) -> bool:
    """Whether the present needs make up one of the mode's sets: then every missing need
    is optional (it adds a sub-test; the verdict comes without it).

    >>> can_run([("true_scores", "confidence"), ("true_scores", "steps")], ["true_scores", "steps"])
    True
    >>> can_run([("steps", "tool_steps")], ["steps"])
    False
    """
    have = set(present)
    return any(set(g) <= have for g in groups)


def shape_note(failure_mode: str, counts: WindowCounts) -> str | None:
    """Why the traces cannot feed this mode whatever is sent, or None."""
    several = counts.with_three_tool_steps
    if failure_mode != "FM-1" or several is None or counts.with_spans < THREE_TOOL_CALLS:
        return None
    if several >= THREE_TOOL_CALLS:
        return None
    return SHAPE_NOTE.format(n=several, m=counts.with_spans)


def readers_of(need: str, *, besides: str) -> list[str]:
    """The other modes that read ``need``: what a project-wide change to it moves too."""
    out = []
    for mode in registry.DETECTORS:
        if mode != besides and need in registry.needs_of(mode):
            out.append(mode)
    return out


def fitted(
    remedies: list[dict[str, str]],
    *,
    need: str,
    failure_mode: str,
    optional: bool,
    native: bool,
) -> list[dict[str, str]]:
    """The remedies of one missing need as this mode and these traces should read them."""
    out: list[dict[str, Any]] = []
    for rem in remedies:
        if rem["how"] == "score_roles":
            if optional:
                continue  # a project-wide role to fill one mode's optional test: no
            others = readers_of(need, besides=failure_mode)
            if others:
                rem = {**rem, "text": f"{rem['text']} (changes what {', '.join(others)} read too)"}
        if native and rem["how"] in OTEL_ONLY:
            continue
        out.append(rem)
    if native and need in NATIVE:
        out.insert(0, {"how": "api", "text": NATIVE[need]})
    return out
