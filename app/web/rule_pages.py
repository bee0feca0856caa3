"""Settings · rules (admin): list, create, edit, pause and delete alert rules, and preview a
rule on the stored history before saving it.

The form posts to one address per rule with ``action=preview`` or ``action=save`` (two
submit buttons: no JavaScript needed). Both go through the API's own models
(:class:`app.rules.schemas.RuleCreate`, :class:`~app.rules.schemas.PreviewRequest`), so a
bad value is a 422 page naming the field (``rule.condition.warning: ...``) that keeps what
was typed; a preview renders the chart (:mod:`app.web.rule_chart`) and the list of alerts
the rule would have opened, with the form as it was, ready to save.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Form, Request
from sqlalchemy.orm import Session

from app.db import write_session
from app.deps import EngineDep, Int4Id, SessionDep, found
from app.models import Monitor
from app.models.base import utcnow
from app.monitors.detection import DetectorConfigError
from app.rules import store
from app.rules.preview import preview
from app.rules.schemas import PreviewOut, PreviewRequest, RuleCreate, RulePatch
from app.web import rule_chart
from app.web.deps import WebContext, WebDep
from app.web.form_values import FormError, parse_form
from app.web.settings_pages import act, require_admin, settings_page
from detectors.rules.spec import METRICS
from detectors.rules.wording import fmt_value

router = APIRouter(prefix="/settings/rules", include_in_schema=False)
FILTERS = ("agent", "agent_version", "environment", "tool", "model", "user", "score_name")
WINDOWS = ((300, "5 min"), (900, "15 min"), (1800, "30 min"), (3600, "1 h"), (21600, "6 h"),
           (86400, "24 h"))  # fmt: skip
FORS = ((0, "at once"), (300, "5 min"), (600, "10 min"), (900, "15 min"), (1800, "30 min"),
        (3600, "1 h"))  # fmt: skip
DEFAULT_FORM = {"metric": "trace_error_rate", "window_seconds": "900", "op": "above",
                "for_seconds": "600", "no_data": "ok", "interval_seconds": "300", "days": "7",
                "evaluation_delay_seconds": "120", "condition_type": "static",
                "direction": "up", "ert_days": "30", "reference_days": "7",
                "min_change_percent": "10", "severity": "warning"}  # fmt: skip


def _render(web: WebContext, session: Session, **extra: Any) -> Any:
    rules = store.list_rules(session, project_id=web.principal.project_id)
    extra.setdefault("form", dict(DEFAULT_FORM))
    return settings_page(
        web, session, "rules", rules=[_row(r) for r in rules], metrics=METRICS, filters=FILTERS,
        windows=WINDOWS, fors=FORS, **extra,
    )  # fmt: skip


def _row(m: Monitor) -> dict[str, Any]:
    rule = (m.detector_params or {}).get("rule") or {}
    cond = rule.get("condition") or {}
    where = ", ".join(f"{k}={v}" for k, v in (rule.get("filter") or {}).items() if v)
    levels = ", ".join(f"{lvl} {cond[lvl]:g}" for lvl in ("warning", "critical")
                       if cond.get(lvl) is not None)  # fmt: skip
    metric = METRICS.get(rule.get("metric", ""))
    held = f" for {cond['for_seconds'] // 60} min" if cond.get("for_seconds") else ""
    if cond.get("type") == "calibrated":
        said = (f"it changes {cond.get('direction', 'up')} (calibrated: "
                f"{cond.get('expected_days_between_false_alerts', 30):g} days between false "
                f"alerts){held}")  # fmt: skip
    else:
        said = f"{cond.get('op', '')} {levels}{held}"
    return {
        "id": m.id, "name": m.name, "enabled": m.enabled,
        "metric": metric.label if metric else rule.get("metric", "?"),
        "where": where or "all traffic", "by": ", ".join(rule.get("group_by") or []) or "—",
        "condition": said,
    }  # fmt: skip


def form_of(m: Monitor) -> dict[str, Any]:
    """A saved rule as the form's values."""
    rule = (m.detector_params or {}).get("rule") or {}
    cond = rule.get("condition") or {}
    out = {"rule_id": m.id, "name": m.name, "metric": rule.get("metric", ""),
           "window_seconds": str(rule.get("window_seconds", 900)),
           "evaluation_delay_seconds": str(rule.get("evaluation_delay_seconds", 120)),
           "interval_seconds": str(m.interval_seconds), "days": "7",
           "labels": ", ".join(f"{k}={v}" for k, v in (m.labels or {}).items()),
           "group_by": list(rule.get("group_by") or [])}  # fmt: skip
    out["condition_type"] = str(cond.get("type", "static"))
    for k in ("op", "no_data", "direction", "severity"):
        out[k] = str(cond.get(k, DEFAULT_FORM.get(k, "")))
    for k in ("warning", "critical"):
        out[k] = "" if cond.get(k) is None else f"{cond[k]:g}"
    out["for_seconds"] = str(cond.get("for_seconds", 0))
    out["ert_days"] = f"{cond.get('expected_days_between_false_alerts', 30):g}"
    out["reference_days"] = f"{cond.get('reference_seconds', 7 * 86400) / 86400:g}"
    out["min_change_percent"] = f"{cond.get('min_relative_change', 0.1) * 100:g}"
    for k in FILTERS:
        out[f"f_{k}"] = (rule.get("filter") or {}).get(k) or ""
    return out


async def _typed(request: Request) -> dict[str, Any]:
    form = await request.form()
    typed: dict[str, Any] = {k: str(v) for k, v in form.items() if k != "group_by"}
    typed["group_by"] = [str(v) for v in form.getlist("group_by")]
    return typed


def _labels(text: str) -> dict[str, str]:
    out = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise FormError(f"labels: {part!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


def _rule(typed: dict[str, Any]) -> dict[str, Any]:
    """The rule the form describes, as the API's body has it (blank fields left out)."""

    def given(name: str) -> str | None:
        value = str(typed.get(name, "")).strip()
        return value or None

    common = {"for_seconds": given("for_seconds") or 0, "no_data": given("no_data") or "ok"}
    cond: dict[str, Any]
    if given("condition_type") == "calibrated":
        cond = {"type": "calibrated", "direction": given("direction") or "up",
                "expected_days_between_false_alerts": given("ert_days") or 30,
                "reference_seconds": _seconds(given("reference_days"), "reference_days", 7),
                "min_relative_change": _fraction(given("min_change_percent")),
                "severity": given("severity") or "warning", **common}  # fmt: skip
    else:
        cond = {"type": "static", "op": given("op"), "warning": given("warning"),
                "critical": given("critical"), **common}  # fmt: skip
    return {
        "metric": given("metric"),
        "filter": {k: given(f"f_{k}") for k in FILTERS if given(f"f_{k}")},
        "group_by": typed.get("group_by") or [],
        "window_seconds": given("window_seconds") or 900,
        "evaluation_delay_seconds": given("evaluation_delay_seconds") or 120,
        "condition": cond,
    }


def _seconds(days: str | None, field: str, default: float) -> int:
    """Days typed in a form as whole buckets of seconds (the spec refuses others)."""
    try:
        value = float(days) if days else default
    except ValueError:
        raise FormError(f"{field}: {days!r} is not a number of days") from None
    return int(round(value * 86400 / 300)) * 300


def _fraction(percent: str | None) -> float | str:
    try:
        return float(percent) / 100 if percent else 0.1
    except ValueError:
        return percent or ""  # the spec names the field


@router.get("")
def rules_page(web: WebDep, session: SessionDep) -> Any:
    require_admin(web)
    return _render(web, session)


@router.get("/{rule_id}")
def rule_page(rule_id: Int4Id, web: WebDep, session: SessionDep) -> Any:
    require_admin(web)
    rule = found(store.get_rule(session, project_id=web.principal.project_id, rule_id=rule_id),
                 "rule", rule_id)  # fmt: skip
    return _render(web, session, form=form_of(rule), editing=rule.id)


@router.post("")
async def new_rule(request: Request, web: WebDep, session: SessionDep, engine: EngineDep) -> Any:
    typed = await _typed(request)
    return _submit(web, session, engine, typed, rule_id=None)


@router.post("/{rule_id}")
async def edit_rule(
    rule_id: Int4Id, request: Request, web: WebDep, session: SessionDep, engine: EngineDep
) -> Any:
    typed = await _typed(request)
    return _submit(web, session, engine, {**typed, "rule_id": rule_id}, rule_id=rule_id)


def _submit(web: WebContext, session: Session, engine: Any, typed: dict[str, Any], *,
            rule_id: int | None) -> Any:  # fmt: skip
    shown: dict[str, Any] = {"form": typed, "editing": rule_id}
    pid = web.principal.project_id

    def do_preview() -> str:
        req = parse_form(PreviewRequest, {
            "rule": _rule(typed), "interval_seconds": typed.get("interval_seconds") or 300,
            "days": typed.get("days") or 7})  # fmt: skip
        answer = preview(session, project_id=pid, req=req, now=utcnow())
        shown.update(_preview_view(answer))
        n = len(answer.episodes)
        return (f"Over the last {_days(req.days)} this rule would have opened "
                f"{n} alert{'s' if n != 1 else ''}. Nothing is saved yet.")  # fmt: skip

    def do_save() -> str:
        body: dict[str, Any] = {"name": str(typed.get("name", "")).strip(), "rule": _rule(typed),
                                "interval_seconds": typed.get("interval_seconds") or 300,
                                "labels": _labels(str(typed.get("labels", "")))}  # fmt: skip
        try:
            with write_session(engine) as s:
                if rule_id is None:
                    made = store.create_rule(s, project_id=pid, body=parse_form(RuleCreate, body))
                    shown["form"] = form_of(made)
                    return f"Rule {made.name!r} saved; it runs every {made.interval_seconds // 60} min."
                row = found(store.get_rule(s, project_id=pid, rule_id=rule_id), "rule", rule_id)
                store.update_rule(s, rule=row, patch=parse_form(RulePatch, body))
                return f"Rule {row.name!r} saved."
        except DetectorConfigError as exc:
            raise FormError(str(exc)) from None

    action = do_preview if typed.get("action") == "preview" else do_save
    return act(web, session, "rules", str(typed.get("csrf", "")), action, typed, shown,
               renderer=_render)  # fmt: skip


def answer_days(answer: PreviewOut) -> float:
    return round((answer.end - answer.start).total_seconds() / 86400, 2)


def _days(days: float) -> str:
    return f"{days:g} day" + ("" if days == 1 else "s")


def _preview_view(answer: PreviewOut) -> dict[str, Any]:
    label = f"{answer.label} per {answer.step_seconds // 60}-minute step, with its levels"
    rows = [{"group": ", ".join(f"{k}={v}" for k, v in e.group.items()) or "all traffic",
             "opened": f"{e.opened_at:%Y-%m-%d %H:%M}",
             "resolved": f"{e.resolved_at:%Y-%m-%d %H:%M}" if e.resolved_at else "still open",
             "severity": e.severity, "worst": fmt_value(e.peak_value, answer.unit)}
            for e in answer.episodes]  # fmt: skip
    return {
        "preview": answer,
        "chart": rule_chart.svg(answer, label=label),
        "legend": rule_chart.legend(answer),
        "episode_rows": rows,
        "days_text": _days(answer_days(answer)),
    }


@router.post("/{rule_id}/pause")
def pause_rule(
    rule_id: Int4Id, web: WebDep, session: SessionDep, engine: EngineDep,
    csrf: str = Form(""), enabled: str = Form("false"),
) -> Any:  # fmt: skip
    def action() -> str:
        on = enabled == "true"
        with write_session(engine) as s:
            row = found(store.get_rule(s, project_id=web.principal.project_id, rule_id=rule_id),
                        "rule", rule_id)  # fmt: skip
            store.update_rule(s, rule=row, patch=RulePatch.model_validate({"enabled": on}))
            return f"Rule {row.name!r} {'resumed' if on else 'paused'}."

    return act(web, session, "rules", csrf, action, {}, renderer=_render)


@router.post("/{rule_id}/delete")
def delete_rule(
    rule_id: Int4Id, web: WebDep, session: SessionDep, engine: EngineDep, csrf: str = Form("")
) -> Any:
    def action() -> str:
        with write_session(engine) as s:
            row = found(store.get_rule(s, project_id=web.principal.project_id, rule_id=rule_id),
                        "rule", rule_id)  # fmt: skip
            name = row.name
            s.delete(row)
        return f"Rule {name!r} deleted."

    return act(web, session, "rules", csrf, action, {}, renderer=_render)
