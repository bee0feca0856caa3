"""What an evaluator computes, validated once: an LLM judge's endpoint, prompt and answer
format, or a built-in check and its arguments (issue #51).

Every field is checked when the evaluator is saved, so a bad pattern, schema, URL or
template is a 422 naming the field, never an evaluation error hours later.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import jsonschema
import re2
from pydantic import ConfigDict, Field, field_validator, model_validator

from app.alerts.outbound import OutboundRefused, parse_url
from app.request_model import RequestModel

# ``{input}``, ``{output}``, ``{conversation}``, ``{tool_calls}``, ``{metadata.key}``: only
# these are replaced, so a prompt may show literal JSON such as {"score": 0.5}.
VARIABLE = re.compile(
    r"\{(input|output|conversation|tool_calls|metadata\.[A-Za-z0-9_.\-]{1,128})\}"
)
CHECKS = ("json_valid", "json_schema", "pattern", "refusal", "failed_tool_call",
          "repeated_tool_call")  # fmt: skip
REFUSAL_PHRASES = (
    "i can't help with", "i cannot help with", "i can't assist", "i cannot assist",
    "i'm sorry, but i can't", "i am sorry, but i cannot", "i'm not able to help",
    "i am unable to", "i won't be able to", "as an ai language model",
)  # fmt: skip


class JudgeConfig(RequestModel):
    """An LLM judge behind an OpenAI-compatible chat-completions endpoint."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(
        min_length=1, max_length=500, description="e.g. https://api.openai.com/v1"
    )
    model: str = Field(min_length=1, max_length=200)
    prompt: str = Field(min_length=1, max_length=20_000)
    answer: Literal["score", "label"] = "score"
    # For ``answer: label``: each label the judge may give and the score it stands for.
    labels: dict[str, float] = Field(default_factory=dict, max_length=20)
    max_output_tokens: int = Field(256, ge=16, le=4096)
    # The trace's content in the prompt is cut to this many characters per variable.
    max_content_chars: int = Field(8_000, ge=200, le=100_000)

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        try:
            parse_url(v)
        except OutboundRefused as exc:
            raise ValueError(str(exc)) from None
        return v.rstrip("/")

    @field_validator("prompt")
    @classmethod
    def _variables(cls, v: str) -> str:
        if not VARIABLE.search(v):
            raise ValueError(
                "must use at least one of {input}, {output}, {conversation}, {tool_calls}, "
                "{metadata.<key>}"
            )
        return v

    @field_validator("labels")
    @classmethod
    def _label_values(cls, v: dict[str, float]) -> dict[str, float]:
        for name, value in v.items():
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name!r}: a label's score must lie in [0, 1]")
            if not 0 < len(name) <= 128:
                raise ValueError("a label is 1 to 128 characters")
        return v

    @model_validator(mode="after")
    def _labels_for_label_answers(self) -> JudgeConfig:
        if self.answer == "label" and len(self.labels) < 2:
            raise ValueError("labels: an answer by label needs at least two labels with scores")
        return self


class CheckConfig(RequestModel):
    """A deterministic check: 1.0 when the trace passes it, 0.0 when it fails."""

    check: Literal[
        "json_valid", "json_schema", "pattern", "refusal", "failed_tool_call",
        "repeated_tool_call",
    ]  # fmt: skip
    # The text a text check reads.
    field: Literal["output", "input", "conversation"] = "output"
    json_schema: dict[str, Any] | None = Field(None, alias="schema")
    pattern: str | None = Field(None, max_length=1000)
    # pattern: pass when it is found (True) or when it is absent (False).
    present: bool = True
    phrases: list[str] | None = Field(None, max_length=100)
    min_repeats: int = Field(3, ge=2, le=100)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _arguments(self) -> CheckConfig:
        if self.check == "json_schema":
            if self.json_schema is None:
                raise ValueError("schema: the json_schema check needs a JSON schema")
            try:
                jsonschema.validators.validator_for(self.json_schema).check_schema(self.json_schema)
            except jsonschema.SchemaError as exc:
                raise ValueError(f"schema: not a valid JSON schema: {exc.message}") from None
        if self.check == "pattern":
            if not self.pattern:
                raise ValueError("pattern: the pattern check needs a pattern (RE2 syntax)")
            try:
                re2.compile(self.pattern)
            except re2.error as exc:
                why = exc.args[0] if exc.args else exc
                why = why.decode(errors="replace") if isinstance(why, bytes) else str(why)
                raise ValueError(f"pattern: not a valid RE2 pattern: {why}") from None
        return self


class Selection(RequestModel):
    """Which traces an evaluator reads; an empty list means any."""

    model_config = ConfigDict(extra="forbid")

    agents: list[str] = Field(default_factory=list, max_length=50)
    versions: list[str] = Field(default_factory=list, max_length=50)
    sources: list[Literal["production", "eval", "shadow"]] = Field(default_factory=list)
    environments: list[str] = Field(default_factory=list, max_length=20)
    # "session": judge a whole multi-turn session (its traces' conversation, in order) once
    # it has been idle ``session_idle_seconds``; the score lands on its last turn.
    scope: Literal["trace", "session"] = "trace"
    session_idle_seconds: int = Field(default=1800, ge=60, le=7 * 86400)


class EvaluatorSettings(RequestModel):
    """What can change without changing what the evaluator computes (no new version)."""

    model_config = ConfigDict(extra="forbid")

    selection: Selection = Field(default_factory=lambda: Selection())
    sample_rate: float = Field(1.0, gt=0.0, le=1.0, description="share of traces, by trace id")
    delay_seconds: int = Field(60, ge=0, le=86_400, description="after the trace settles")
    daily_calls: int = Field(10_000, ge=1, le=10_000_000)
    daily_tokens: int = Field(10_000_000, ge=1_000, le=10_000_000_000)
    concurrency: int = Field(8, ge=1, le=256)
    timeout_seconds: float = Field(30.0, ge=1.0, le=300.0)
    max_retries: int = Field(2, ge=0, le=5)
    enabled: bool = True


class EvaluatorCreate(EvaluatorSettings):
    name: str = Field(min_length=1, max_length=128)
    kind: Literal["llm_judge", "check"]
    score_name: str | None = Field(None, min_length=1, max_length=128)
    objective: str | None = Field(
        None, min_length=1, max_length=128,
        description="the `true` score this evaluator's score predicts (judge-label agreement, PPI)",
    )  # fmt: skip
    judge: JudgeConfig | None = None
    check: CheckConfig | None = None
    api_key: str | None = Field(None, max_length=1000, description="write-only")

    @model_validator(mode="after")
    def _one_config(self) -> EvaluatorCreate:
        if self.objective is not None and self.objective == (self.score_name or self.name):
            raise ValueError("objective: the score a judge predicts is another score (the "
                             "labels' name), not the judge's own score name")
        if self.kind == "llm_judge" and (self.judge is None or self.check is not None):
            raise ValueError("judge: an llm_judge evaluator takes `judge` (and no `check`)")
        if self.kind == "check" and (self.check is None or self.judge is not None):
            raise ValueError("check: a check evaluator takes `check` (and no `judge`)")
        return self


class EvaluatorPatch(RequestModel):
    model_config = ConfigDict(extra="forbid")

    selection: Selection | None = None
    sample_rate: float | None = Field(None, gt=0.0, le=1.0)
    delay_seconds: int | None = Field(None, ge=0, le=86_400)
    daily_calls: int | None = Field(None, ge=1, le=10_000_000)
    daily_tokens: int | None = Field(None, ge=1_000, le=10_000_000_000)
    concurrency: int | None = Field(None, ge=1, le=256)
    timeout_seconds: float | None = Field(None, ge=1.0, le=300.0)
    max_retries: int | None = Field(None, ge=0, le=5)
    enabled: bool | None = None
    objective: str | None = Field(None, max_length=128)
    # Changing these makes a new version.
    judge: JudgeConfig | None = None
    check: CheckConfig | None = None
    api_key: str | None = Field(None, max_length=1000)


def config_of(kind: str, config: dict[str, Any]) -> JudgeConfig | CheckConfig:
    """A stored evaluator's config, parsed again (it was validated when saved)."""
    if kind == "llm_judge":
        return JudgeConfig.model_validate(config)
    return CheckConfig.model_validate(config)
