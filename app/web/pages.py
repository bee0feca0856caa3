"""The pages: overview, monitor, alerts, trace explorer (labeling: app.web.label_pages).

Pages read through the features' store functions with the request's session, as the API
does. Quick actions (ack, resolve, silence, label) are calls from the page's script to the
JSON API with the session cookie and its CSRF token; forms (the overview's default
monitors, :mod:`app.web.settings_pages`) post to the page with the token and call the
API's service functions with the API's role checks, so the UI can do nothing the API
would not let the same key do.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import APIRouter, Form, HTTPException, Query
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session

from app.agents.ranges import window
from app.agents.summary import busiest
from app.alerts import lifecycle
from app.alerts import store as alerts
from app.alerts.schemas import SilenceCreate
from app.db import write_session
from app.deps import EngineDep, Int4Id, Int8Id, SessionDep, found
from app.ingest.session_ids import MAX_ID_CHARS
from app.issues import store as issue_store
from app.models.base import utcnow
from app.monitors import defaults
from app.monitors import store as monitors
from app.onboarding import OtelEnv
from app.sessions import store as sessions
from app.traces import search as trace_search
from app.traces import store as traces
from app.traces.schemas import TraceOut, TracePage
from app.web import alert_state, alert_view, health, open_span, queries, run_chart, trace_view
from app.web.deps import WebContext, WebDep
from app.web.span_tree import span_depths

router = APIRouter(include_in_schema=False)
TEXT_SEARCH_DEFAULT = timedelta(hours=24)


@router.get("/")
def overview(web: WebDep, session: SessionDep, created: int | None = None) -> Any:
    data = queries.overview(session, project_id=web.principal.project_id)
    settings = web.request.app.state.settings
    agents = busiest(session, project_id=web.principal.project_id, win=window("24h", utcnow()))
    return web.render(
        "overview.html",
        **data,
        agents=agents,
        otel_env=OtelEnv(endpoint=settings.public_url).shell(),
        first_verdicts=health.first_verdicts_words(),
        flash=f"Created the default monitors ({created})." if created else None,
    )


@router.post("/monitors/defaults")
def create_default_monitors(web: WebDep, engine: EngineDep, csrf: str = Form("")) -> Any:
    """The overview's button: the API's default monitors (same service function)."""
    web.check_form(csrf, role="admin")
    with write_session(engine) as session:
        made = defaults.create_defaults(session, project_id=web.principal.project_id)
    return RedirectResponse(f"/?created={len(made)}", status_code=303)


@router.get("/monitors/{monitor_id}")
def monitor_page(monitor_id: Int4Id, web: WebDep, session: SessionDep) -> Any:
    pid = web.principal.project_id
    monitor = found(
        monitors.get_monitor(session, project_id=pid, monitor_id=monitor_id), "monitor", monitor_id
    )
    runs = monitors.list_runs(session, monitor_id=monitor_id)
    latest = runs[-1] if runs else None
    mine = [
        a
        for state in ("firing", "acknowledged")
        for a in alerts.list_alerts(session, project_id=pid, state=state, monitor_id=monitor.id)
    ]
    row = queries.monitor_row(
        session, monitor, now=utcnow().replace(second=0, microsecond=0),
        open_alerts=len(mine), first_data=queries.first_trace_at(session, project_id=pid),
        counts=queries.overview_counts(session),
    )  # fmt: skip
    name = row["health"].statistic_name
    chart = run_chart.svg(
        [run_chart.RunPoint(r.at, r.statistic, r.threshold, r.fired, r.status) for r in runs],
        marks=run_chart.Marks(),
        label=f"{name} per run, against its threshold",
    )
    return web.render(
        "monitor.html",
        monitor=monitor,
        chart=chart,
        latest=latest,
        row=row,
        open_alerts=mine,
        readiness=row["readiness"],
        title=queries.FAILURE_MODES.get(monitor.failure_mode, ""),
    )


@router.get("/alerts")
def alerts_page(
    web: WebDep,
    session: SessionDep,
    state: str | None = Query(None, pattern="^(firing|acknowledged|resolved)?$"),
    severity: str | None = Query(None, pattern="^(info|warning|critical)?$"),
) -> Any:
    pid = web.principal.project_id
    rows = alerts.list_alerts(
        session, project_id=pid, state=state or None, severity=severity or None, limit=200
    )
    names = monitors.monitor_names(session, project_id=pid)
    now = utcnow()
    spans = open_span.list_spans(session, rows, now=now)
    me = web.principal.actor
    keys = alert_state.actor_names(
        session, project_id=pid, actors=[me, *(a.acknowledged_by or "" for a in rows)]
    )
    lines = {
        a.id: alert_state.state_line(a, span=spans[a.id], names=keys, now=now)
        for a in rows
        if a.id in spans
    }
    return web.render(
        "alerts.html", alerts=rows, state=state or "", severity=severity or "",
        monitor_names=names, open_for=spans, state_lines=lines, me=keys.get(me, me),
    )  # fmt: skip


@router.get("/alerts/{alert_id}")
def alert_page(alert_id: Int8Id, web: WebDep, session: SessionDep) -> Any:
    """One alert with its evidence and every transition (the link notifications carry)."""
    pid = web.principal.project_id
    alert = found(alerts.get_alert(session, project_id=pid, alert_id=alert_id), "alert", alert_id)
    events = alerts.alert_events(session, alert_id=alert_id)
    monitor = (
        monitors.get_monitor(session, project_id=pid, monitor_id=alert.monitor_id)
        if alert.monitor_id
        else None
    )
    now = utcnow()
    view = alert_view.alert_view(session, alert=alert, monitor=monitor, events=events, now=now)
    span = str(open_span.alert_open_span(session, alert, monitor, now=now))
    me = web.principal.actor
    keys = alert_state.actor_names(
        session,
        project_id=pid,
        actors=[me, alert.acknowledged_by or "", *(e.actor for e in events)],
    )
    view["open_for"] = span
    view["state_line"] = alert_state.state_line(alert, span=span, names=keys, now=now)
    # The failure issues it is about (an ISSUES alert's label) or its examples belong to.
    named = str((alert.labels or {}).get("issue", ""))
    view["issues"] = issue_store.issues_among(
        session, project_id=pid, trace_ids=[t["trace_id"] for t in view["current_examples"]],
        issue_ids=[int(named)] if named.isdigit() else [],
    )  # fmt: skip
    return web.render(
        "alert.html", alert=alert, monitor=monitor, me=keys.get(me, me), actor_names=keys, **view
    )


@router.post("/alerts/{alert_id}/{action}")
def alert_action(
    alert_id: Int8Id,
    action: str,
    web: WebDep,
    engine: EngineDep,
    csrf: str = Form(""),
) -> Any:
    """Acknowledge, resolve or silence (4 hours, this alert's mode and monitor) from the
    alert page without JavaScript (the page's script calls the JSON API instead); the
    annotate role, as the API asks."""
    if action not in ("ack", "resolve", "silence"):
        raise HTTPException(404, f"no alert action {action!r}")
    web.check_form(csrf, role="annotate")
    public_url = web.request.app.state.settings.public_url
    try:
        with write_session(engine) as session:
            pid = web.principal.project_id
            alert = found(
                alerts.get_alert(session, project_id=pid, alert_id=alert_id), "alert", alert_id
            )
            if action == "silence":
                _silence_for(session, web, alert)
            else:
                step = lifecycle.acknowledge if action == "ack" else lifecycle.resolve
                step(session, alert, actor=web.principal.actor, now=utcnow(), public_url=public_url)
    except lifecycle.TransitionError as exc:
        raise HTTPException(409, str(exc)) from None
    return RedirectResponse(f"/alerts/{alert_id}", status_code=303)


def _silence_for(session: Any, web: Any, alert: Any) -> None:
    """The silence the alert page's button asks for: 4 hours on this failure mode (and
    monitor), as its script sends to ``POST /api/v1/silences``."""
    matchers = [{"name": "failure_mode", "op": "=", "value": alert.failure_mode}]
    monitor = monitors.get_monitor(session, project_id=web.principal.project_id,
                                   monitor_id=alert.monitor_id) if alert.monitor_id else None  # fmt: skip
    if monitor is not None:
        matchers.append({"name": "monitor", "op": "=", "value": monitor.name})
    body = SilenceCreate.model_validate({
        "matchers": matchers, "duration_seconds": 4 * 3600,
        "comment": f"silenced from the alert page (alert {alert.id})",
    })  # fmt: skip
    alerts.create_silence(
        session, project_id=web.principal.project_id, body=body,
        actor=web.principal.actor, now=utcnow(),
    )  # fmt: skip


@router.get("/traces")
def traces_page(
    web: WebDep,
    session: SessionDep,
    agent: str | None = Query(None, max_length=128),
    version: str | None = Query(None, max_length=64),
    status: str | None = Query(None, pattern="^(ok|error)?$"),
    source: str | None = Query(None, pattern="^(production|eval|shadow)?$"),
    since: str | None = Query(None, max_length=40),
    until: str | None = Query(None, max_length=40),
    q: str | None = Query(None, max_length=200),
    trace_id: str | None = Query(None, max_length=64),
    session_id: str | None = Query(None, alias="session", max_length=MAX_ID_CHARS),
    user: str | None = Query(None, max_length=MAX_ID_CHARS),
    loop: str | None = Query(None, pattern="^(true)?$"),
    tool: str | None = Query(None, max_length=128),
    model: str | None = Query(None, max_length=128),
    cursor: Int8Id | None = None,
) -> Any:
    """Newest first, keyset pages; a text search (trace attributes, span content) is
    bounded to a time range (default: the last 24 hours) and reads at most
    :data:`app.traces.search.SCAN_TRACES` traces a page, since it scans what they hold."""
    start, end = parse_when(since, "since"), parse_when(until, "until")
    text = (q or "").strip() or None
    if text and start is None:
        start = utcnow() - TEXT_SEARCH_DEFAULT
    filtered = traces.filtered(
        project_id=web.principal.project_id, agent=agent or None, agent_version=version or None,
        trace_id=(trace_id or "").strip() or None, status=status or None,
        source=source or None, since=start, until=end,
        session_id=(session_id or "").strip() or None, user_id=(user or "").strip() or None,
        loop=True if loop else None, tool=(tool or "").strip() or None,
        model=(model or "").strip() or None,
    )  # fmt: skip
    scanned_to, scanned = None, 0
    if text:
        found = trace_search.search_traces(
            session, filtered, project_id=web.principal.project_id,
            text=text, limit=50, cursor=cursor,
        )  # fmt: skip
        rows, next_cursor, scanned_to = found.rows, found.next_cursor, found.scanned_to
        scanned = found.scanned
    else:
        listed = traces.list_traces(session, filtered, limit=50, cursor=cursor)
        rows, next_cursor = listed.rows, listed.next_cursor
    page = TracePage(traces=[TraceOut.model_validate(t) for t in rows], next_cursor=next_cursor)
    filters = {"agent": agent or "", "version": version or "", "status": status or "",
               "source": source or "", "since": since or "", "until": until or "",
               "q": q or "", "trace_id": trace_id or "", "session": session_id or "",
               "user": user or "", "loop": loop or "", "tool": tool or "",
               "model": model or ""}  # fmt: skip
    searched_from = start if text and not since else None
    totals = queries.trace_totals(
        session, project_id=web.principal.project_id, trace_ids=[t.trace_id for t in page.traces]
    )
    return web.render(
        "traces.html", page=page, filters=filters, searched_from=searched_from, totals=totals,
        scanned_to=scanned_to, scan_traces=scanned,
    )  # fmt: skip


def parse_when(value: str | None, field: str) -> datetime | None:
    """A filter's time: ISO 8601 or the browser's ``datetime-local`` (read as UTC)."""
    if not value or not value.strip():
        return None
    try:
        t = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
    except ValueError:
        raise HTTPException(422, f"{field}: not a date and time (use 2026-12-04T09:30)") from None
    except OverflowError:  # 0001-01-01T00:00+01:00 is year 0 in UTC
        raise HTTPException(422, f"{field}: out of range once read as UTC") from None


def _trace(session: Session, web: WebContext, trace_id: str) -> dict[str, Any]:
    """The trace with its spans as the pages read it, or a 404 naming its id."""
    got = traces.get_trace(session, project_id=web.principal.project_id, trace_id=trace_id)
    return found(got, "trace", repr(trace_id)).model_dump()


@router.get("/traces/{trace_id}")
def trace_page(trace_id: str, web: WebDep, session: SessionDep) -> Any:
    trace = _trace(session, web, trace_id)
    pid = web.principal.project_id
    view = trace_view.trace_view(
        session, project_id=pid, trace=trace, depth=span_depths(trace["spans"])
    )
    turn = sessions.turn_of(session, project_id=pid, trace_id=trace_id)
    issues = issue_store.issues_of_trace(session, project_id=pid, trace_id=trace_id)
    return web.render("trace.html", trace=trace, turn=turn, issues=issues, **view)


@router.get("/traces/{trace_id}/conversation")
def trace_conversation(trace_id: str, web: WebDep, session: SessionDep) -> Any:
    """The conversation alone, as an HTML fragment (the labeling page shows it inline)."""
    trace = _trace(session, web, trace_id)
    chat = trace_view.conversation(
        trace["spans"], trace_view.events_of(session, web.principal.project_id, trace_id)
    )
    return web.render("_chat.html", chat=chat, trace=trace)
