"""The derived fields of one settled trace (input identity, decision, confidence, source),
from its spans and their GenAI events.

Rules (docs/guides/derived-fields.md); a value the telemetry gave explicitly always wins:

- **input identity**: :mod:`app.derive.identity` on the user side of the first LLM call
  (step order, :func:`detectors.stored_times.step_order_key`); the *input text* embedded is
  that text with the exclude patterns removed and whitespace collapsed (case kept);
- **decision**: per agent, a JSON path or regex on the final output text; by default the
  tools the agent executed (tool spans, else the calls its LLM steps requested) joined by
  ``>``, then ``|`` and the final LLM call's finish reason (``error`` when that call failed
  without one): ``get_weather>lookup_order|stop``, ``|stop`` without tools;
- **confidence**: the configured field (a JSON path into the final output, or a span
  attribute), else the mean token probability ``mean(exp(logprob))`` of the final call when
  logprobs were captured; absent otherwise;
- **source**: ``eval`` when the resource's ``deployment.environment`` (or ``.name``) is one
  of the project's eval environments, else ``production``.

What the job derived is remembered in the trace attribute ``telltale.derived``: a stored
value equal to the remembered one is ours and may be re-derived (a late span changed the
trace), any other stored value was sent and is kept.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.derive.config import DerivedFieldRules
from app.derive.identity import embedding_text, input_hash
from app.derive.json_path import read_json_path
from app.derive.loops import ToolLoop, tool_loop
from app.derive.messages import CallContent, call_content
from app.derive.patterns import extract
from detectors.stored_times import step_order_key

DERIVED = "telltale.derived"
ENVIRONMENT_KEYS = ("resource.deployment.environment.name", "resource.deployment.environment")
_MAX_DECISION = 256


@dataclass
class DerivedFields:
    """What was derived; None where nothing was (or an explicit value stands)."""

    input_text: str | None = None
    output_text: str | None = None
    input_hash: str | None = None
    decision: str | None = None
    confidence: float | None = None
    source: str | None = None
    loop: ToolLoop | None = None  # always set by derive_trace (app/derive/loops.py)


def owned(trace: Mapping[str, Any]) -> dict[str, Any]:
    value = (trace.get("attributes") or {}).get(DERIVED)
    return value if isinstance(value, dict) else {}


def is_explicit(trace: Mapping[str, Any], name: str, stored: Any) -> bool:
    """A stored value is explicit unless it is the one this job derived before."""
    return stored is not None and stored != owned(trace).get(name)


def derive_trace(
    trace: Mapping[str, Any],
    spans: Sequence[Mapping[str, Any]],
    events: Mapping[str, list[dict[str, Any]]],
    config: DerivedFieldRules,
    priced: Mapping[str, float] | None = None,
) -> DerivedFields:
    """``priced``: the costs, by span id, of its LLM calls sent without one."""
    ordered = sorted(spans, key=step_order_key)
    llm = [s for s in ordered if s.get("kind") == "llm"]
    calls = [
        call_content(dict(s.get("attributes") or {}), events.get(s["span_id"], [])) for s in llm
    ]
    attrs = trace.get("attributes") or {}
    out = DerivedFields(loop=tool_loop(ordered, priced))
    ident = config.input_identity
    first = next((c for c in calls if c.user or c.system), None)
    if first is not None:
        parts = [*first.system, *first.user] if ident.include_system_prompt else first.user
        # Embedded without its volatile parts: a timestamp or a session id says nothing of
        # the intent, and repeats of one input then share one text (embedded once).
        out.input_text = embedding_text("\n".join(first.user), ident.exclude_patterns)
        if not is_explicit(trace, "input_hash", trace.get("input_hash")):
            out.input_hash = input_hash("\n".join(parts), exclude_patterns=ident.exclude_patterns)
    final = next((c for c in reversed(calls) if c.output), None)
    out.output_text = "\n".join(final.output) if final is not None else None
    if not is_explicit(trace, "decision", attrs.get("decision")):
        out.decision = _decision(trace, ordered, llm, calls, out.output_text, config)
    if not is_explicit(trace, "confidence", attrs.get("confidence")) and not any(
        s.get("confidence") is not None for s in spans
    ):
        out.confidence = _confidence(ordered, calls, out.output_text, config)
    if not _source_given(trace, spans):
        environment = next((attrs[k] for k in ENVIRONMENT_KEYS if attrs.get(k)), None)
        out.source = "eval" if environment in config.source.eval_environments else "production"
    return out


def _decision(
    trace: Mapping[str, Any],
    ordered: list[Mapping[str, Any]],
    llm: list[Mapping[str, Any]],
    calls: list[CallContent],
    output: str | None,
    config: DerivedFieldRules,
) -> str | None:
    rule = config.decision.agents.get(str(trace.get("agent") or ""))
    if rule is not None:
        if output is None:
            return None
        if rule.json_path is not None:
            value = read_json_path(rule.json_path, output)
            if value is None or isinstance(value, dict | list):
                return None
            return str(value).lower() if isinstance(value, bool) else str(value)[:_MAX_DECISION]
        found = extract(str(rule.regex), output)
        return None if found is None else found[:_MAX_DECISION]
    if config.decision.default == "none" or not llm:
        return None
    tools = [
        str(s.get("tool_name") or s.get("name") or "") for s in ordered if s.get("kind") == "tool"
    ]
    if not tools:
        tools = [name for c in calls for name in c.requested_tools]
    finish = calls[-1].finish_reasons[0] if calls[-1].finish_reasons else ""
    if not finish and llm[-1].get("status") == "error":
        finish = "error"
    return f"{'>'.join(tools)}|{finish}"[:_MAX_DECISION]


def _unit_number(value: Any) -> float | None:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and 0.0 <= number <= 1.0 else None


def _confidence(
    ordered: list[Mapping[str, Any]],
    calls: list[CallContent],
    output: str | None,
    config: DerivedFieldRules,
) -> float | None:
    name = config.confidence.field
    if name is not None and name.startswith("$"):
        return _unit_number(read_json_path(name, output)) if output is not None else None
    if name is not None:  # the last LLM span's attribute, else the last span's
        llm_first = sorted(reversed(ordered), key=lambda s: s.get("kind") != "llm")
        for span in llm_first:
            value = (span.get("attributes") or {}).get(name)
            if value is not None:
                return _unit_number(value)
        return None
    if calls and calls[-1].logprobs:
        probs = [math.exp(min(lp, 0.0)) for lp in calls[-1].logprobs]
        return round(sum(probs) / len(probs), 6)
    return None


def _source_given(trace: Mapping[str, Any], spans: Sequence[Mapping[str, Any]]) -> bool:
    attrs = trace.get("attributes") or {}
    if "resource.telltale.source" in attrs:
        return True
    if any("telltale.source" in (s.get("attributes") or {}) for s in spans):
        return True
    # A non-default source we did not set came with the trace (native ingest).
    return is_explicit(trace, "source", trace.get("source")) and trace.get("source") != "production"
