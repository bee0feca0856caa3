"""A project's rules for the fields derived from its traces (``projects.derived_field_rules``).

Stored as JSON, null meaning every default; ``GET/PUT /api/v1/project/derived-fields`` read
and set it. Every user-supplied pattern is compiled with RE2 (:mod:`app.derive.patterns`), so
no rule can make a derivation take more than linear time in its input; a pattern RE2
refuses (backreferences, lookaround, too big a DFA) is a 422 naming its field.

Defaults strip the volatile parts of an input before it is hashed (ISO-8601 timestamps,
UUIDs, hex ids of 16+ digits, numbers of 6+ digits), so two runs of one request made a
second apart, or for two sessions, share one identity.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator
from sqlalchemy.orm import Session

from app.derive.json_path import parse_json_path
from app.derive.patterns import compile_exclusion, compile_user_pattern
from app.models import Project
from app.request_model import RequestModel
from app.response_model import ResponseModel

DEFAULT_EXCLUDE_PATTERNS = (
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
    r"\d{4}-\d{2}-\d{2}",
    r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
    r"(?i)\b(?:0x)?[0-9a-f]{16,}\b",
    r"\b\d{6,}\b",
)
MAX_PATTERNS = 32
MAX_PATTERN_CHARS = 500
DEFAULT_GROUP_THRESHOLD = 0.85
DEFAULT_EVAL_ENVIRONMENTS = ("eval", "evaluation", "ci", "test")

Pattern = Annotated[str, Field(min_length=1, max_length=MAX_PATTERN_CHARS)]
Name = Annotated[str, Field(min_length=1, max_length=128)]


class _Rules(RequestModel):
    # A misspelt key would silently be a default: refuse it, naming it.
    model_config = ConfigDict(extra="forbid")


def _checked_pattern(value: str) -> str:
    compile_user_pattern(value)  # ValueError names what RE2 refused
    return value


class InputIdentity(_Rules):
    """What the input hash reads: the first LLM call's user-side text, minus exclusions."""

    exclude_patterns: list[Pattern] = Field(
        default_factory=lambda: list(DEFAULT_EXCLUDE_PATTERNS), max_length=MAX_PATTERNS
    )
    include_system_prompt: bool = False
    # Cosine between MiniLM input embeddings at or above which two inputs are one intent.
    group_threshold: float = Field(default=DEFAULT_GROUP_THRESHOLD, gt=0.0, le=1.0)

    @field_validator("exclude_patterns")
    @classmethod
    def _compile(cls, value: list[str]) -> list[str]:
        for i, pattern in enumerate(value):
            try:
                compile_exclusion(pattern)
            except ValueError as exc:
                raise ValueError(f"exclude_patterns[{i}]: {exc}") from None
        return value


class AgentDecision(_Rules):
    """One of ``json_path`` (into the final output parsed as JSON) or ``regex`` (group 1,
    else the whole match, of the final output text)."""

    json_path: str | None = Field(default=None, min_length=1, max_length=MAX_PATTERN_CHARS)
    regex: Pattern | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> AgentDecision:
        if (self.json_path is None) == (self.regex is None):
            raise ValueError("give exactly one of json_path or regex")
        if self.json_path is not None:
            parse_json_path(self.json_path)
        if self.regex is not None:
            _checked_pattern(self.regex)
        return self


class Decision(_Rules):
    default: Literal["tools_and_finish", "none"] = "tools_and_finish"
    agents: dict[Name, AgentDecision] = Field(default_factory=dict, max_length=256)


class Confidence(_Rules):
    """``field``: a JSON path (``$.confidence``) into the final output parsed as JSON, or
    the name of a span attribute (the last LLM span's, else any span's). Without it, the
    mean token probability when token logprobs were captured."""

    field: str | None = Field(default=None, min_length=1, max_length=256)

    @field_validator("field")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        if value is not None and value.startswith("$"):
            parse_json_path(value)
        return value


class Source(_Rules):
    eval_environments: list[Name] = Field(
        default_factory=lambda: list(DEFAULT_EVAL_ENVIRONMENTS), max_length=64
    )


class Counterfactual(_Rules):
    """Pair a ``candidate_version`` run of ``agent`` with a ``baseline_version`` run of the
    same input identity (shadow traffic): ``counterfactual_of`` names the baseline."""

    agent: Name
    baseline_version: Annotated[str, Field(min_length=1, max_length=64)]
    candidate_version: Annotated[str, Field(min_length=1, max_length=64)]

    @model_validator(mode="after")
    def _two_versions(self) -> Counterfactual:
        if self.baseline_version == self.candidate_version:
            raise ValueError("baseline_version and candidate_version must differ")
        return self


class TextEmbeddings(_Rules):
    enabled: bool = True


class DerivedFieldRules(_Rules):
    """The whole configuration; every part optional (its defaults apply)."""

    input_identity: InputIdentity = Field(default_factory=InputIdentity)
    decision: Decision = Field(default_factory=Decision)
    confidence: Confidence = Field(default_factory=Confidence)
    source: Source = Field(default_factory=Source)
    counterfactual: Counterfactual | None = None
    text_embeddings: TextEmbeddings = Field(default_factory=TextEmbeddings)


class DerivedFieldRulesOut(ResponseModel):
    config: DerivedFieldRules  # the effective configuration, defaults filled in
    customised: bool  # false: the project follows every default
    text_embeddings_on_server: bool  # false: the server has text embeddings turned off


def effective_config(stored: dict[str, Any] | None) -> DerivedFieldRules:
    """The stored JSON as a config; one that no longer validates falls back to defaults.

    A stored config was valid when it was written; a later release may tighten a rule, and
    a job must not stop deriving for the whole project over it.
    """
    if not stored:
        return DerivedFieldRules()
    try:
        return DerivedFieldRules.model_validate(stored)
    except ValidationError:
        return DerivedFieldRules()


def derived_field_rules_view(project: Project, *, server_embeddings: bool) -> DerivedFieldRulesOut:
    return DerivedFieldRulesOut(
        config=effective_config(project.derived_field_rules),
        customised=project.derived_field_rules is not None,
        text_embeddings_on_server=server_embeddings,
    )


def set_derived_field_rules(
    session: Session, *, project_id: int, config: DerivedFieldRules | None
) -> Project:
    """Set (or, with None, clear to the defaults) the project's rules; the caller commits.

    Traces derived under the old rules keep their fields; new traces follow the new ones.
    """
    project = session.get(Project, project_id)
    if project is None:  # the caller's key names it, so only a race with its deletion
        raise LookupError(f"project {project_id} not found")
    project.derived_field_rules = None if config is None else config.model_dump(mode="json")
    return project
