"""The built-in deterministic checks: no user code, no model, linear-time patterns.

Each returns a :class:`Verdict`: 1.0 when the trace passes, 0.0 when it fails, with the
label ``pass``/``fail`` and a reason a person can check against the trace.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

import jsonschema
import re2

from app.evaluators.content import TraceContent
from app.evaluators.spec import REFUSAL_PHRASES, CheckConfig


@dataclass(frozen=True)
class Verdict:
    value: float
    label: str | None
    reason: str
    tokens: int = 0


def _verdict(passed: bool, reason: str) -> Verdict:
    return Verdict(1.0 if passed else 0.0, "pass" if passed else "fail", reason)


def _text(content: TraceContent, field: str) -> str:
    if field == "input":
        return content.input
    if field == "conversation":
        return content.conversation
    return content.output


def _json(text: str) -> tuple[object | None, str | None]:
    body = text.strip()
    if body.startswith("```"):  # a fenced block: its inside
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0]
    try:
        return json.loads(body), None
    except ValueError as exc:
        return None, str(exc)


def run_check(config: CheckConfig, content: TraceContent) -> Verdict:
    """The check's verdict on one trace."""
    if config.check in ("json_valid", "json_schema"):
        text = _text(content, config.field)
        if not text.strip():
            return _verdict(False, f"the {config.field} is empty")
        value, error = _json(text)
        if error is not None:
            return _verdict(False, f"the {config.field} is not JSON: {error}")
        if config.check == "json_valid":
            return _verdict(True, f"the {config.field} is valid JSON")
        assert config.json_schema is not None
        validator = jsonschema.validators.validator_for(config.json_schema)(config.json_schema)
        problem = next(iter(validator.iter_errors(value)), None)
        if problem is not None:
            where = "/".join(str(p) for p in problem.absolute_path) or "(root)"
            return _verdict(False, f"the {config.field} breaks the schema at {where}: "
                                   f"{problem.message[:300]}")  # fmt: skip
        return _verdict(True, f"the {config.field} matches the schema")
    if config.check == "pattern":
        assert config.pattern is not None
        found = re2.search(config.pattern, _text(content, config.field))
        if config.present:
            return _verdict(found is not None, f"pattern {'found' if found else 'not found'} "
                                               f"in the {config.field}")  # fmt: skip
        return _verdict(found is None, f"pattern {'found' if found else 'absent'} in the "
                                       f"{config.field}" + (f": {found.group(0)[:100]!r}" if found else ""))  # fmt: skip
    if config.check == "refusal":
        text = _text(content, config.field).lower()
        phrases = [p.lower() for p in (config.phrases or REFUSAL_PHRASES)]
        hit = next((p for p in phrases if p in text), None)
        if hit is not None:
            return _verdict(False, f"the {config.field} refuses: {hit!r}")
        return _verdict(True, f"no refusal phrase in the {config.field}")
    if config.check == "failed_tool_call":
        failed = [c for c in content.tool_calls if c.status == "error"]
        if failed:
            names = Counter(c.name for c in failed)
            listed = ", ".join(f"{n} ×{k}" if k > 1 else n for n, k in names.most_common(5))
            return _verdict(False, f"{len(failed)} of {len(content.tool_calls)} tool calls "
                                   f"failed: {listed}")  # fmt: skip
        return _verdict(True, f"none of {len(content.tool_calls)} tool calls failed")
    # repeated_tool_call: the same tool with the same arguments, min_repeats times or more
    # Calls whose arguments are unknown (not recorded) cannot be shown to be the same.
    same = Counter((c.name, c.arguments.strip()) for c in content.tool_calls
                   if c.arguments.strip())  # fmt: skip
    (name, args), times = same.most_common(1)[0] if same else (("", ""), 0)
    if times >= config.min_repeats:
        shown = args if len(args) <= 120 else args[:117] + "..."
        return _verdict(False, f"{name}({shown}) called {times} times with the same arguments")
    return _verdict(True, f"no tool called {config.min_repeats} times with the same arguments")
