"""Settings · monitors (admin): create the defaults, pause or resume, run now, edit
severity, interval, expected days between false alerts, ``for`` and detector parameters.

Through the API's ``MonitorPatch`` and :func:`app.monitors.store.update_monitor` (whose
``DetectorConfigError`` names the parameter) and :meth:`app.monitors.runner.MonitorRunner.run_now`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Form, HTTPException, Request

from app.db import write_session
from app.deps import EngineDep, Int4Id, MonitorRunnerDep, ProjectComputeSlot, SessionDep, found
from app.monitors import defaults
from app.monitors import store as monitor_store
from app.monitors.runner import DetectorsBusy
from app.monitors.schemas import MonitorPatch
from app.web.deps import WebContext, WebDep
from app.web.form_values import FormError, json_field, parse_form
from app.web.settings_pages import act

router = APIRouter(prefix="/settings/monitors", include_in_schema=False)
TUNABLE = ("severity", "interval_seconds", "expected_days_between_false_alerts", "for_seconds")


@router.post("/defaults")
def monitor_defaults(
    web: WebDep, session: SessionDep, engine: EngineDep, csrf: str = Form("")
) -> Any:
    def action() -> str:
        with write_session(engine) as s:
            made = defaults.create_defaults(s, project_id=web.principal.project_id)
        return f"The {len(made)} default monitors are in place."

    return act(web, session, "monitors", csrf, action, {})


def _monitor(session: Any, web: WebContext, monitor_id: int) -> Any:
    pid = web.principal.project_id
    return found(
        monitor_store.get_monitor(session, project_id=pid, monitor_id=monitor_id),
        "monitor",
        monitor_id,
    )


def _patch(engine: Any, web: WebContext, monitor_id: int, patch: MonitorPatch) -> None:
    with write_session(engine) as s:
        monitor = _monitor(s, web, monitor_id)
        try:
            monitor_store.update_monitor(s, monitor=monitor, patch=patch)
        except ValueError as exc:  # DetectorConfigError: names the parameter
            raise FormError(str(exc)) from None


@router.post("/{monitor_id}/pause")
def pause_monitor(
    monitor_id: Int4Id, web: WebDep, session: SessionDep, engine: EngineDep,
    csrf: str = Form(""), enabled: str = Form("false"),
) -> Any:  # fmt: skip
    def action() -> str:
        on = enabled == "true"
        _patch(engine, web, monitor_id, MonitorPatch.model_validate({"enabled": on}))
        return f"Monitor {monitor_id} {'resumed' if on else 'paused'}."

    return act(web, session, "monitors", csrf, action, {})


@router.post("/{monitor_id}/edit")
async def edit_monitor(
    monitor_id: Int4Id, request: Request, web: WebDep, session: SessionDep, engine: EngineDep
) -> Any:
    form = dict((await request.form()).items())
    data: dict[str, Any] = {k: form[k] for k in TUNABLE if str(form.get(k, "")).strip()}

    def action() -> str:
        raw = str(form.get("detector_params", "")).strip()
        if raw:
            data["detector_params"] = json_field(raw, field="detector_params")
        _patch(engine, web, monitor_id, parse_form(MonitorPatch, data))
        return f"Saved monitor {monitor_id}."

    typed = {"monitor_id": monitor_id, **form}
    return act(web, session, "monitors", str(form.get("csrf", "")), action, typed)


@router.post("/{monitor_id}/run", dependencies=[ProjectComputeSlot])
def run_now(
    monitor_id: Int4Id, web: WebDep, session: SessionDep, runner: MonitorRunnerDep,
    csrf: str = Form(""),
) -> Any:  # fmt: skip
    def action() -> str:
        _monitor(session, web, monitor_id)
        try:
            run = runner.run_now(monitor_id)
        except DetectorsBusy as exc:
            raise HTTPException(429, str(exc), headers={"Retry-After": "5"}) from None
        run = found(run, "monitor", monitor_id)
        reason = (run.evidence or {}).get("reason")
        said = f" ({reason})" if isinstance(reason, str) else ""
        return f"Ran monitor {monitor_id}: {run.status.replace('_', ' ')}{said}{', fired' if run.fired else ''}."

    return act(web, session, "monitors", csrf, action, {})
