"""The derived-field rules edited field by field (``POST /settings/derived/fields``).

The JSON form (:func:`app.web.settings_pages.put_derived`) takes every rule
``PUT /api/v1/project/derived-fields`` takes, but a team mostly changes a handful: how decisions
are read (the default, and per agent a JSON path or regex over the output), where
confidence is, which environments are eval traffic, the input identity's exclusions, a
counterfactual pair, text embeddings on or off. These get one input each. The form is
applied over the project's effective rules, so anything only the JSON form sets is kept,
and the result goes through :class:`app.derive.config.DerivedFieldRules` like the API's body:
a refused value is a 422 naming its field, with what was typed kept.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Form

from app.deps import SessionDep
from app.derive.config import DerivedFieldRules, effective_config, set_derived_field_rules
from app.models import Project
from app.web.deps import WebDep
from app.web.form_values import FormError, parse_form
from app.web.settings_pages import act

router = APIRouter(prefix="/settings", include_in_schema=False)


def _lines(value: str, sep: str | None = None) -> list[str]:
    parts = value.split(sep) if sep else value.splitlines()
    return [p.strip() for p in parts if p.strip()]


def _agents(agents: list[str], hows: list[str], exprs: list[str]) -> dict[str, Any]:
    """One rule per row with an agent and an expression; a row without an expression is
    dropped (how a rule is removed), an expression without its agent refused."""
    out: dict[str, Any] = {}
    for i, (agent, how, expr) in enumerate(zip(agents, hows, exprs, strict=False)):
        agent, expr = agent.strip(), expr.strip()
        if not expr:
            continue
        if not agent:
            raise FormError(f"decision.agents row {i + 1}: give the agent its {how} is for")
        if how not in ("json_path", "regex"):
            raise FormError(f"decision.agents row {i + 1}: json_path or regex, not {how!r}")
        out[agent] = {how: expr}
    return out


def config_from_form(form: dict[str, Any], current: DerivedFieldRules) -> DerivedFieldRules:
    """``current`` with the form's fields set (see the module's notes)."""
    data = current.model_dump(mode="json")
    data["decision"]["default"] = form["decision_default"] or "tools_and_finish"
    data["decision"]["agents"] = _agents(form["agent"], form["how"], form["expr"])
    data["confidence"]["field"] = form["confidence_field"].strip() or None
    data["source"]["eval_environments"] = _lines(form["eval_environments"], ",")
    identity = data["input_identity"]
    identity["exclude_patterns"] = _lines(form["exclude_patterns"])
    identity["include_system_prompt"] = form["include_system_prompt"]
    try:
        identity["group_threshold"] = float(form["group_threshold"])
    except ValueError:
        raise FormError("input_identity.group_threshold: a number in (0, 1]") from None
    cf = [form["cf_agent"].strip(), form["cf_baseline"].strip(), form["cf_candidate"].strip()]
    if any(cf):
        data["counterfactual"] = dict(
            zip(("agent", "baseline_version", "candidate_version"), cf, strict=True)
        )
    else:
        data["counterfactual"] = None
    data["text_embeddings"]["enabled"] = form["text_embeddings"]
    return parse_form(DerivedFieldRules, data)


@router.post("/derived/fields")
def put_derived_fields(
    web: WebDep,
    session: SessionDep,
    csrf: str = Form(""),
    decision_default: str = Form(""),
    agent: list[str] = Form([]),
    how: list[str] = Form([]),
    expr: list[str] = Form([]),
    confidence_field: str = Form("", max_length=256),
    eval_environments: str = Form("", max_length=10_000),
    exclude_patterns: str = Form("", max_length=20_000),
    include_system_prompt: str = Form(""),
    group_threshold: str = Form("", max_length=32),
    cf_agent: str = Form("", max_length=128),
    cf_baseline: str = Form("", max_length=64),
    cf_candidate: str = Form("", max_length=64),
    text_embeddings: str = Form(""),
) -> Any:
    form: dict[str, Any] = {
        "decision_default": decision_default, "agent": agent, "how": how, "expr": expr,
        "confidence_field": confidence_field, "eval_environments": eval_environments,
        "exclude_patterns": exclude_patterns, "group_threshold": group_threshold,
        "include_system_prompt": include_system_prompt == "on",
        "cf_agent": cf_agent, "cf_baseline": cf_baseline, "cf_candidate": cf_candidate,
        "text_embeddings": text_embeddings == "on",
    }  # fmt: skip
    pid = web.principal.project_id

    def action() -> str:
        project = session.get(Project, pid)
        current = effective_config(project.derived_field_rules if project else None)
        set_derived_field_rules(session, project_id=pid, config=config_from_form(form, current))
        session.commit()
        return "Derived fields saved; traces that arrive from now on are derived by them."

    return act(web, session, "derived", csrf, action, {"fields": form})
