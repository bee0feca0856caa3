"""Settings pages (admin only): API keys, silences, score roles, derived fields, retention;
monitors' forms in :mod:`app.web.monitor_settings`, channels in :mod:`app.web.channel_pages`.

Each form posts to its page with the login's CSRF token; the values go through the API's
own request models and service functions (never an HTTP call), so a bad value is refused
with the message the API gives, naming the field, in a 422 page that keeps what was typed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.responses import RedirectResponse
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app import keys
from app.alerts import store as alert_store
from app.alerts.schemas import SilenceCreate
from app.db import project_row, write_session
from app.deps import EngineDep, Int4Id, SessionDep, found
from app.derive.config import DerivedFieldRules, derived_field_rules_view, set_derived_field_rules
from app.keys import KeyCreate
from app.models import Project, Silence
from app.models.base import utcnow
from app.monitors import store as monitor_store
from app.onboarding import OtelEnv
from app.retention.policy import RetentionUpdate, retention_view, set_retention
from app.scores import roles as score_roles
from app.scores.schemas import ScoreRolesBody
from app.web.deps import WebContext, WebDep
from app.web.form_values import FormError, json_field, parse_form

router = APIRouter(prefix="/settings", include_in_schema=False)
ADMIN = "admin"
TABS = ("keys", "monitors", "silences", "scores", "derived", "retention")  # channels: own module
R = TypeVar("R")


def require_admin(web: WebContext) -> None:
    if not web.principal.can(ADMIN):
        raise HTTPException(
            403, f"Settings need a key with the admin role; yours is {web.principal.role}."
        )


def settings_page(
    web: WebContext, session: Any, tab: str, *, status: int = 200, **extra: Any
) -> Any:
    pid = web.principal.project_id
    data: dict[str, Any] = {"tab": tab, **extra}
    if tab == "keys":
        data["keys"] = keys.list_keys(session, project_id=pid)
    elif tab == "monitors":
        data["monitors"] = monitor_store.list_monitors(session, project_id=pid)
    elif tab == "silences":
        now = utcnow()
        data["silences"] = [
            alert_store.silence_view(s, now=now)
            for s in alert_store.list_silences(session, project_id=pid, active_after=now)
        ]
    elif tab == "scores":
        data["roles"] = score_roles.get_roles(session, project_id=pid)
    elif tab == "retention":
        project = session.get(Project, pid)
        settings = web.request.app.state.settings
        data["retention"] = retention_view(project, default_days=settings.retention_days)
    elif tab == "derived":
        project = session.get(Project, pid)
        settings = web.request.app.state.settings
        view = derived_field_rules_view(project, server_embeddings=settings.derive_text_embeddings)
        data["derived"] = view
        data["derived_json"] = json.dumps(view.config.model_dump(mode="json"), indent=2)
    return web.render("settings.html", status_code=status, **data)


def act(
    web: WebContext,
    session: Any,
    tab: str,
    csrf: str,
    action: Callable[[], str],
    form: dict[str, Any],
    shown: dict[str, Any] | None = None,
    renderer: Callable[..., Any] | None = None,
) -> Any:
    """Check the form, run ``action``; on success back to the tab with what happened (and
    ``shown``, filled by the action), on a refused value the tab again, 422, the message
    and the values typed."""
    web.check_form(csrf, role=ADMIN)

    def render(**kw: Any) -> Any:
        if renderer is not None:
            return renderer(web, session, **kw)
        return settings_page(web, session, tab, **kw)

    try:
        done = action()
    except FormError as exc:
        return render(status=422, error=str(exc), form=form)
    return render(flash=done, **(shown or {}))


def act_on_row(
    web: WebContext,
    session: Any,
    tab: str,
    csrf: str,
    engine: Engine,
    model: type[R],
    noun: str,
    row_id: int,
    change: Callable[[Session, R], str],
    renderer: Callable[..., Any] | None = None,
) -> Any:
    """:func:`act` for a form action on one row of the caller's project: ``change`` gets row
    ``row_id`` of ``model`` in one write transaction and says what happened; a row the project
    lacks is the 404 ``"<noun> <row_id> not found in this project"``."""

    def action() -> str:
        with write_session(engine) as s:
            pid = web.principal.project_id
            return change(s, found(project_row(s, model, row_id, project_id=pid), noun, row_id))

    return act(web, session, tab, csrf, action, {}, renderer=renderer)


@router.get("")
def settings_home(web: WebDep) -> Any:
    require_admin(web)
    return RedirectResponse("/settings/keys", status_code=303)


@router.get("/{tab}")
def settings_tab(tab: str, web: WebDep, session: SessionDep) -> Any:
    require_admin(web)
    if tab not in TABS:
        raise HTTPException(404, f"no settings page {tab!r}")
    return settings_page(web, session, tab)


@router.post("/keys")
def create_key(
    web: WebDep,
    session: SessionDep,
    csrf: str = Form(""),
    role: str = Form(""),
    name: str = Form(""),
) -> Any:
    shown: dict[str, str] = {}

    def action() -> str:
        body = parse_form(KeyCreate, {"role": role, "name": name})
        shown["new_key"] = keys.create_key(
            session, project_name=web.principal.project_name, role=body.role, name=body.name
        )
        session.commit()
        if body.role == "ingest":
            public = web.request.app.state.settings.public_url
            shown["otel_env"] = OtelEnv(endpoint=public, key=shown["new_key"]).shell()
        article = "an" if body.role[0] in "aeiou" else "a"
        return f"Created {article} {body.role} key. Copy it now: it is shown only this once."

    return act(web, session, "keys", csrf, action, {"role": role, "name": name}, shown)


@router.post("/keys/{key_id}/revoke")
def revoke_key(key_id: Int4Id, web: WebDep, session: SessionDep, csrf: str = Form("")) -> Any:
    def action() -> str:
        if key_id == web.principal.key_id:
            raise FormError(
                "key: this is the key you are logged in with; log in with another admin key to revoke it"
            )
        if (
            keys.revoke_key(
                session, project_id=web.principal.project_id, key_id=key_id, now=utcnow()
            )
            is None
        ):
            raise HTTPException(404, f"key {key_id} not found in this project")
        session.commit()
        return f"Revoked key {key_id}."

    return act(web, session, "keys", csrf, action, {})


@router.post("/silences")
def create_silence(
    web: WebDep, session: SessionDep, engine: EngineDep, csrf: str = Form(""),
    failure_mode: str = Form(""), monitor: str = Form(""), hours: str = Form(""),
    comment: str = Form(""),
) -> Any:  # fmt: skip
    typed = {"failure_mode": failure_mode, "monitor": monitor, "hours": hours, "comment": comment}

    def action() -> str:
        matchers = [
            {"name": name, "op": "=", "value": value.strip()}
            for name, value in (("failure_mode", failure_mode), ("monitor", monitor))
            if value.strip()
        ]
        try:
            seconds: Any = round(float(hours) * 3600) if hours.strip() else None
        except (ValueError, OverflowError):  # "nan", "inf"
            raise FormError("duration_seconds: the hours must be a number") from None
        body = parse_form(
            SilenceCreate, {"matchers": matchers, "duration_seconds": seconds, "comment": comment}
        )
        try:
            with write_session(engine) as s:
                alert_store.create_silence(
                    s,
                    project_id=web.principal.project_id,
                    body=body,
                    actor=web.principal.actor,
                    now=utcnow(),
                )
        except ValueError as exc:
            raise FormError(str(exc)) from None
        return "Silence created."

    return act(web, session, "silences", csrf, action, typed)


@router.post("/silences/{silence_id}/expire")
def expire_silence(
    silence_id: Int4Id, web: WebDep, session: SessionDep, engine: EngineDep, csrf: str = Form("")
) -> Any:
    def change(s: Session, silence: Silence) -> str:
        now = utcnow()
        if silence.ends_at > now:
            silence.ends_at = max(now, silence.starts_at)
        return f"Silence {silence_id} expired."

    return act_on_row(
        web, session, "silences", csrf, engine, Silence, "silence", silence_id, change
    )


@router.post("/scores")
async def put_roles(request: Request, web: WebDep, session: SessionDep, engine: EngineDep) -> Any:
    form = await request.form()
    names, kinds = form.getlist("name"), form.getlist("role")
    sources = [str(s) for s in form.getlist("label_source")]
    typed = {"rows": list(zip(names, kinds, strict=False)), "label_sources": sources}

    def action() -> str:
        roles = {
            str(n).strip(): str(k)
            for n, k in zip(names, kinds, strict=False)
            if str(n).strip() and k
        }
        body = parse_form(ScoreRolesBody, {"roles": roles, "label_sources": sources})
        wanted = score_roles.ScoreRoles.from_mapping(body.roles, body.label_sources)
        with write_session(engine) as s:
            score_roles.put_roles(s, project_id=web.principal.project_id, roles=wanted)
        return "Score roles saved; the next monitor runs read every stored score with them."

    return act(web, session, "scores", str(form.get("csrf", "")), action, typed)


@router.post("/retention")
def put_retention(
    web: WebDep, session: SessionDep, csrf: str = Form(""), retention_days: str = Form("")
) -> Any:
    def action() -> str:
        days: Any = retention_days.strip() or None
        body = parse_form(RetentionUpdate, {"retention_days": days})
        set_retention(session, project_id=web.principal.project_id, days=body.retention_days)
        session.commit()
        return (
            "Retention saved." if body.retention_days else "Retention follows the server's default."
        )

    return act(web, session, "retention", csrf, action, {"retention_days": retention_days})


@router.post("/derived")
def put_derived(
    web: WebDep,
    session: SessionDep,
    csrf: str = Form(""),
    rules: str = Form("", max_length=100_000),
    reset: str = Form(""),
) -> Any:
    """The derived-field rules as the API takes them (``PUT /api/v1/project/derived-fields``),
    as JSON in a text box; or back to every default."""

    def action() -> str:
        config: DerivedFieldRules | None = None
        if not reset:
            data = json_field(rules or "{}", field="rules")
            config = parse_form(DerivedFieldRules, data)
        set_derived_field_rules(session, project_id=web.principal.project_id, config=config)
        session.commit()
        if config is None:
            return "Derived fields follow every default again; new traces are derived by them."
        return "Derived-field rules saved; traces that arrive from now on are derived by them."

    return act(web, session, "derived", csrf, action, {"rules": rules})
