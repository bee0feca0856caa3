"""The pages: overview, monitor, alerts, trace explorer, labeling.

Pages read through small queries; every action (ack, resolve, silence, label) is a call
from the page's script to the JSON API with the session cookie and its CSRF token, so
the UI can do nothing the API would not let the same key do.
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter, HTTPException, Query
from sqlalchemy import select

from app.api.deps import Int4Id, Int8Id
from app.api.routes.traces import get_trace
from app.api.routes.traces import list_traces as api_list_traces
from app.models import Alert, AlertEvent, Monitor
from app.models.base import UTCTime
from app.models.labeling import LabelQueue
from app.web import queries
from app.web.deps import WebDep

router = APIRouter(include_in_schema=False)


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x


@router.get("/")
def overview(web: WebDep) -> Any:
    with web.request.app.state.sessionmaker() as session:
        data = queries.overview(session, web.principal.project_id)
    return web.render("overview.html", **data)


@router.get("/monitors/{monitor_id}")
def monitor_page(monitor_id: Int4Id, web: WebDep) -> Any:
    with web.request.app.state.sessionmaker() as session:
        monitor = session.get(Monitor, monitor_id)
        if monitor is None or monitor.project_id != web.principal.project_id:
            raise HTTPException(404, f"monitor {monitor_id} not found in this project")
        runs = queries.monitor_runs(session, monitor_id)
    points = [
        {
            "t": r.at.isoformat(),
            "statistic": _num(r.statistic),
            "threshold": _num(r.threshold),
            "fired": r.fired,
            "status": r.status,
        }
        for r in runs
    ]
    latest = runs[-1] if runs else None
    return web.render(
        "monitor.html",
        monitor=monitor,
        points=points,
        latest=latest,
        title=queries.FAILURE_MODES.get(monitor.failure_mode, ""),
    )


@router.get("/alerts")
def alerts_page(
    web: WebDep,
    state: str | None = Query(None, pattern="^(firing|acknowledged|resolved)?$"),
    severity: str | None = Query(None, pattern="^(info|warning|critical)?$"),
) -> Any:
    with web.request.app.state.sessionmaker() as session:
        rows = queries.alerts(
            session, web.principal.project_id, state=state or None, severity=severity or None
        )
        names = dict(
            session.execute(
                select(Monitor.id, Monitor.name).where(
                    Monitor.project_id == web.principal.project_id
                )
            ).all()
        )
    return web.render(
        "alerts.html", alerts=rows, state=state or "", severity=severity or "", monitor_names=names
    )


@router.get("/alerts/{alert_id}")
def alert_page(alert_id: Int8Id, web: WebDep) -> Any:
    """One alert with its evidence and every transition (the link notifications carry)."""
    with web.request.app.state.sessionmaker() as session:
        alert = session.get(Alert, alert_id)
        if alert is None or alert.project_id != web.principal.project_id:
            raise HTTPException(404, f"alert {alert_id} not found in this project")
        events = session.scalars(
            select(AlertEvent).where(AlertEvent.alert_id == alert_id).order_by(AlertEvent.id)
        ).all()
        monitor = session.get(Monitor, alert.monitor_id) if alert.monitor_id else None
    return web.render("alert.html", alert=alert, events=events, monitor=monitor)


@router.get("/traces")
def traces_page(
    web: WebDep,
    agent: str | None = None,
    status: str | None = Query(None, pattern="^(ok|error)?$"),
    source: str | None = Query(None, pattern="^(production|eval|shadow)?$"),
    since: UTCTime | None = None,
    cursor: Int8Id | None = None,
) -> Any:
    with web.request.app.state.sessionmaker() as session:
        page = api_list_traces(
            principal=web.principal,
            session=session,
            agent=agent or None,
            status=status or None,  # type: ignore[arg-type]
            source=source or None,  # type: ignore[arg-type]
            since=since,
            until=None,
            limit=50,
            cursor=cursor,
        )
    filters = {"agent": agent or "", "status": status or "", "source": source or ""}
    return web.render("traces.html", page=page, filters=filters)


@router.get("/traces/{trace_id}")
def trace_page(trace_id: str, web: WebDep) -> Any:
    with web.request.app.state.sessionmaker() as session:
        found = get_trace(trace_id=trace_id, principal=web.principal, session=session)
    trace = found.model_dump()
    return web.render("trace.html", trace=trace, tree=_tree(trace["spans"]))


def _tree(spans: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """Spans in step order, each with its depth under its parent (for indentation)."""
    by_id = {s["span_id"]: s for s in spans}
    depth: dict[str, int] = {}

    def level(span: dict[str, Any], seen: frozenset[str] = frozenset()) -> int:
        sid = span["span_id"]
        if sid in depth:
            return depth[sid]
        parent = by_id.get(span.get("parent_span_id") or "")
        d = 0 if parent is None or sid in seen else level(parent, seen | {sid}) + 1
        depth[sid] = d
        return d

    return [(level(s), s) for s in spans]


@router.get("/label")
def label_index(web: WebDep) -> Any:
    with web.request.app.state.sessionmaker() as session:
        names = session.scalars(
            select(LabelQueue.name)
            .where(LabelQueue.project_id == web.principal.project_id)
            .order_by(LabelQueue.name)
        ).all()
    return web.render("label_index.html", queues=names)


@router.get("/label/{queue_name}")
def label_page(queue_name: str, web: WebDep) -> Any:
    with web.request.app.state.sessionmaker() as session:
        queue = session.scalar(
            select(LabelQueue).where(
                LabelQueue.project_id == web.principal.project_id, LabelQueue.name == queue_name
            )
        )
    if queue is None:
        raise HTTPException(404, f"queue {queue_name!r} not found in this project")
    return web.render("label.html", queue=queue)
