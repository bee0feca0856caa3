"""An evaluator's settings form: a saved evaluator as the form's values, the form's values
as the API's body (:class:`~app.evaluators.spec.EvaluatorCreate` or
:class:`~app.evaluators.spec.EvaluatorPatch`), and a refusal's message split by field so
each part shows beside the input it names.

Nothing is validated here: blank inputs are left out (the spec's defaults apply on create,
the saved value stays on edit) and every value goes to the spec models as typed, so a bad
one is refused in the API's words. The form's defaults are read from the spec models.
"""

from __future__ import annotations

import json
import re
from typing import Any

from app.evaluators.spec import CheckConfig, EvaluatorSettings, JudgeConfig, Selection
from app.models.evaluators import Evaluator
from app.web.form_values import FormError, json_field

SETTINGS = ("sample_rate", "delay_seconds", "daily_calls", "daily_tokens", "concurrency",
            "timeout_seconds", "max_retries")  # fmt: skip
SELECTION = ("agents", "versions", "environments")  # comma-separated; sources are checkboxes
SOURCES = ("production", "eval", "shadow")
SCOPE = ("scope", "session_idle_seconds")  # a trace, or a whole session once idle
JUDGE = ("base_url", "model", "prompt", "answer", "max_output_tokens", "max_content_chars")
# The arguments each check reads (the others are left out of its config, so a value typed
# for another check is not saved with this one).
CHECK_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "json_valid": ("field",), "json_schema": ("field", "schema"),
    "pattern": ("field", "pattern", "present"), "refusal": ("field", "phrases"),
    "failed_tool_call": (), "repeated_tool_call": ("min_repeats",),
}  # fmt: skip
CHECK_WORDS = {
    "json_valid": "the text is valid JSON",
    "json_schema": "the text is JSON matching a schema",
    "pattern": "a pattern (RE2) is found, or is absent",
    "refusal": "the agent does not refuse (no refusal phrase)",
    "failed_tool_call": "no tool call failed",
    "repeated_tool_call": "no tool is called again and again with the same arguments",
}
VARIABLES = (
    ("{input}", "the user's messages"), ("{output}", "the agent's final answer"),
    ("{conversation}", "the whole conversation, tool calls and results included"),
    ("{tool_calls}", "each tool call with its arguments and result"),
    ("{metadata.<key>}", "a trace attribute, or agent, agent_version, source, environment"),
)  # fmt: skip
DEFAULT_PROMPT = (
    "Did the agent resolve the user's request?\n\n{conversation}\n\n"
    "Score 1 when the request was fully resolved, 0 when it was not."
)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _defaults() -> dict[str, Any]:
    out: dict[str, Any] = {k: _text(EvaluatorSettings.model_fields[k].default) for k in SETTINGS}
    for k in ("answer", "max_output_tokens", "max_content_chars"):
        out[k] = _text(JudgeConfig.model_fields[k].default)
    for k in ("field", "present", "min_repeats"):
        out[k] = _text(CheckConfig.model_fields[k].default)
    for k in SCOPE:
        out[k] = _text(Selection.model_fields[k].default)
    return {**out, "kind": "llm_judge", "check": "json_valid", "enabled": "true",
            "prompt": DEFAULT_PROMPT, "labels": "pass=1, fail=0", "sources": []}  # fmt: skip


DEFAULT_FORM = _defaults()


def form_of(ev: Evaluator) -> dict[str, Any]:
    """A saved evaluator as the form's values (never its API key: ``has_api_key`` only)."""
    out: dict[str, Any] = {**DEFAULT_FORM, "evaluator_id": ev.id, "name": ev.name,
                           "kind": ev.kind, "score_name": ev.score_name,
                           "objective": ev.objective or "", "has_api_key": bool(ev.api_key),
                           "enabled": _text(ev.enabled)}  # fmt: skip
    for k in SETTINGS:
        out[k] = _text(getattr(ev, k))
    sel = ev.selection or {}
    for k in SELECTION:
        out[k] = ", ".join(sel.get(k) or [])
    out["sources"] = list(sel.get("sources") or [])
    for k in SCOPE:
        out[k] = _text(sel.get(k, out[k]))
    config = ev.config or {}
    if ev.kind == "llm_judge":
        for k in JUDGE:
            out[k] = _text(config.get(k, out.get(k)))
        if config.get("labels"):
            out["labels"] = ", ".join(f"{k}={v:g}" for k, v in config["labels"].items())
    else:
        out["check"] = config.get("check", "json_valid")
        out["field"] = config.get("field", out["field"])
        out["pattern"] = config.get("pattern") or ""
        out["present"] = _text(config.get("present", True))
        out["phrases"] = "\n".join(config.get("phrases") or [])
        out["min_repeats"] = _text(config.get("min_repeats", out["min_repeats"]))
        schema = config.get("schema")
        out["schema"] = "" if schema is None else json.dumps(schema, indent=2)
    return out


def _given(typed: dict[str, Any], name: str) -> str | None:
    value = str(typed.get(name, "")).strip()
    return value or None


def _list(text: str | None) -> list[str]:
    return [p.strip() for p in (text or "").split(",") if p.strip()]


def _labels(text: str | None) -> dict[str, str]:
    """``pass=1, fail=0`` as ``{"pass": "1", "fail": "0"}`` (the spec reads the numbers)."""
    out = {}
    for part in _list(text):
        name, eq, value = part.partition("=")
        if not eq or not name.strip():
            raise FormError(f"labels: {part!r} is not label=score")
        out[name.strip()] = value.strip()
    return out


def _judge(typed: dict[str, Any]) -> dict[str, Any]:
    judge: dict[str, Any] = {k: _given(typed, k) for k in JUDGE if _given(typed, k)}
    if judge.get("answer") == "label":
        judge["labels"] = _labels(_given(typed, "labels"))
    for k in ("base_url", "model", "prompt"):  # required: typed blank, the spec says so
        judge.setdefault(k, "")
    return judge


def _check(typed: dict[str, Any]) -> dict[str, Any]:
    name = _given(typed, "check") or ""
    check: dict[str, Any] = {"check": name}
    for arg in CHECK_ARGUMENTS.get(name, ()):
        value = _given(typed, arg)
        if value is None:
            continue
        if arg == "schema":
            check[arg] = json_field(value, field="schema")
        elif arg == "phrases":
            check[arg] = [p.strip() for p in value.splitlines() if p.strip()]
        else:
            check[arg] = value
    return check


def body_of(typed: dict[str, Any], *, kind: str, editing: bool) -> dict[str, Any]:
    """The API's body for the form: :class:`EvaluatorCreate`'s, or with ``editing``
    :class:`EvaluatorPatch`'s (no name, kind or score name: those are fixed once made)."""
    body: dict[str, Any] = {k: _given(typed, k) for k in SETTINGS if _given(typed, k)}
    body["selection"] = {k: _list(_given(typed, k)) for k in SELECTION}
    body["selection"]["sources"] = list(typed.get("sources") or [])
    for k in SCOPE:
        if _given(typed, k):
            body["selection"][k] = _given(typed, k)
    body["objective"] = _given(typed, "objective")
    if kind == "llm_judge":
        body["judge"] = _judge(typed)
    else:
        body["check"] = _check(typed)
    key = _given(typed, "api_key")
    if editing:
        if typed.get("remove_api_key"):
            body["api_key"] = ""
        elif key and kind == "llm_judge":
            body["api_key"] = key
        return body
    body.update(name=str(typed.get("name", "")).strip(), kind=kind,
                score_name=_given(typed, "score_name"), enabled=typed.get("enabled") == "true")  # fmt: skip
    if key and kind == "llm_judge":
        body["api_key"] = key
    return body


# One part of the API's 422 wording: ``a.b.0: message`` (see form_values.validation_message).
_PART = re.compile(r"; (?=[A-Za-z_][\w.\[\]]*(?: \(key\))?: )")
_INNER = re.compile(r"(?:Value error, )?([A-Za-z_][\w.\[\]]*): (.*)", re.S)
_INPUTS = {*SETTINGS, *SELECTION, *SCOPE, *JUDGE, "sources", "name", "kind", "score_name", "objective",
           "api_key", "labels", "check", "field", "schema", "pattern", "present", "phrases",
           "min_repeats", "trace_id"}  # fmt: skip


def _input_of(path: str) -> tuple[str | None, str]:
    """The form input a location names, its last step that is one, and what the location
    says below it (``judge.labels.pass``: the labels input, ``pass``)."""
    steps = [s for s in re.split(r"[.\[\]]", path.removesuffix(" (key)")) if s]
    for i in range(len(steps) - 1, -1, -1):
        if steps[i] in _INPUTS:
            return steps[i], ".".join(s for s in steps[i + 1 :] if not s.isdigit())
    return None, ""


def field_errors(message: str | None) -> dict[str, str]:
    """Each part of a refusal under the form input it names: ``judge.base_url: ...`` under
    ``base_url``; a model-level ``check: Value error, pattern: ...`` under ``pattern``.
    Parts that name no input are left to the message above the form."""
    out: dict[str, str] = {}
    for part in _PART.split(message or ""):
        loc, sep, said = part.partition(": ")
        if not sep:
            continue
        inner = _INNER.fullmatch(said)
        name, below = _input_of(inner.group(1)) if inner else (None, "")
        if name is not None and inner is not None:
            said = inner.group(2)
        else:
            name, below = _input_of(loc)
            said = said.removeprefix("Value error, ")
        if below:
            said = f"{below}: {said}"
        if name is not None:
            out[name] = f"{out[name]}; {said}" if name in out else said
    return out
