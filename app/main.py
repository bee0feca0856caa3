"""The FastAPI application: ``create_app`` and its lifespan."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy import Engine, orm
from sqlalchemy.exc import DataError, IntegrityError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.admission import Activity, FairAdmission, Overloaded
from app.alerts.outbound import OutboundPolicy
from app.alerts.outbox import DeliveryPolicy, OutboxSender
from app.api.main import api_router
from app.api.read_admission import ReadAdmission
from app.api.request_guard import RequestGuard
from app.auth.tenants import TenantDirectory, is_project
from app.background import Service, start_services, stop_services
from app.db import make_sessionmaker
from app.engines import Engines
from app.media.retention import RetentionService
from app.metrics import WRITE_QUEUE_DEPTH
from app.otlp.paths import OTLP_PATHS, otlp_path_hint
from app.otlp.responses import status_response, wire_format
from app.scheduler.jobs import periodic_jobs
from app.scheduler.service import SchedulerService
from app.settings import Settings, get_settings
from app.storage_health import StorageHealth, storage_failure
from app.web.headers import SecurityHeaders

log = logging.getLogger("telltale")


def create_app(
    settings: Settings | None = None, *, start_background: bool | None = None
) -> FastAPI:
    settings = settings or get_settings()
    run_background = settings.scheduler_enabled if start_background is None else start_background

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engines = Engines.open(settings)
        engine = engines.requests
        app.state.settings = settings
        app.state.engine = engine
        app.state.health_engine = engines.health
        app.state.background_engine = engines.background
        app.state.sessionmaker = make_sessionmaker(engine)
        app.state.storage_health = StorageHealth(engine)
        if engines.background is not engine:
            app.state.storage_health.watch(engines.background)
        app.state.admission = FairAdmission(
            max_concurrent=settings.max_concurrent_writes,
            max_pending=settings.max_pending_writes,
            retry_after=settings.retry_after_seconds,
            activity=app.state.activity,
        )
        WRITE_QUEUE_DEPTH.set_function(lambda: app.state.admission.depth)
        sessionmaker = make_sessionmaker(engines.background)
        scheduler = SchedulerService(
            settings, engines.background, sessionmaker, jobs=periodic_jobs()
        )
        # ``run now`` runs through the scheduler's runner, started or not: one set of
        # detector slots per process, and the same window loading as a scheduled run.
        app.state.monitor_runner = scheduler.runner
        services = (
            start_services(
                background_services(settings, engines.background, sessionmaker, scheduler=scheduler)
            )
            if run_background
            else []
        )
        app.state.services = services
        try:
            yield
        finally:
            stop_services(services)
            engines.dispose()

    # /openapi.json stays; FastAPI's /docs and /redoc pages load their scripts from a CDN,
    # which the pages' Content-Security-Policy (and the no-CDN rule) refuse: they are off.
    app = FastAPI(
        title="Telltale", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None
    )
    _install_error_handlers(app)
    app.include_router(api_router)
    _install_web(app)
    app.state.tenants = TenantDirectory()
    app.state.activity = Activity(contends=is_project)  # projects the gates served lately
    app.add_middleware(
        ReadAdmission,
        max_concurrent=settings.max_concurrent_reads,
        max_pending=settings.max_pending_reads,
        retry_after=settings.retry_after_seconds,
        tenants=app.state.tenants,
        send_timeout=settings.read_send_timeout_seconds,
        activity=app.state.activity,
    )
    app.add_middleware(RequestGuard, max_header_bytes=settings.max_header_bytes)
    app.add_middleware(SecurityHeaders)
    return app


def background_services(
    settings: Settings,
    engine: Engine,
    sessionmaker: orm.sessionmaker[orm.Session],
    *,
    scheduler: SchedulerService | None = None,
) -> list[Service]:
    """Everything the API process runs beside its requests, in start order."""
    return [
        scheduler or SchedulerService(settings, engine, sessionmaker, jobs=periodic_jobs()),
        OutboxSender(
            engine,
            policy=DeliveryPolicy(),
            outbound=OutboundPolicy.from_allow(settings.outbound_allow),
        ),
        RetentionService(settings, engine),
    ]


def _install_web(app: FastAPI) -> None:
    from fastapi.responses import RedirectResponse
    from fastapi.staticfiles import StaticFiles

    from app.web import (
        agent_pages,
        auth_routes,
        channel_pages,
        derived_form,
        evaluator_pages,
        issue_pages,
        label_pages,
        monitor_settings,
        pages,
        price_pages,
        queue_pages,
        rule_pages,
        session_pages,
        settings_pages,
    )
    from app.web.deps import STATIC_DIR, LoginRequired

    app.mount("/static", StaticFiles(directory=str(STATIC_DIR)), name="static")
    app.include_router(auth_routes.router)
    app.include_router(pages.router)
    app.include_router(session_pages.router)
    app.include_router(agent_pages.router)
    app.include_router(issue_pages.router)
    app.include_router(label_pages.router)
    app.include_router(channel_pages.router)
    app.include_router(monitor_settings.router)
    app.include_router(rule_pages.router)
    app.include_router(evaluator_pages.router)
    app.include_router(queue_pages.router)
    app.include_router(price_pages.router)
    app.include_router(settings_pages.router)
    app.include_router(derived_form.router)

    @app.exception_handler(LoginRequired)
    async def to_login(_req: Request, exc: LoginRequired) -> RedirectResponse:
        return RedirectResponse(f"/login?next={exc.next_url}", status_code=303)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(Overloaded)
    async def overloaded(_req: Request, exc: Overloaded) -> JSONResponse:
        return JSONResponse(
            {"detail": "ingest write path is saturated; retry later"},
            status_code=429,
            headers={"Retry-After": str(exc.retry_after)},
        )

    @app.exception_handler(OperationalError)
    @app.exception_handler(InterfaceError)
    @app.exception_handler(PoolTimeout)
    async def db_unavailable(_req: Request, exc: Exception) -> JSONResponse:
        # The database is down, refusing or saturated: retryable, so 503 + Retry-After.
        # A full disk is an outage too, but one that lasts: say so, and ask for a longer wait.
        # Other driver errors are not outages (see refused_value): a 503 would make
        # exporters re-send a poisoned batch forever.
        log.warning("database error: %s", str(exc).splitlines()[0][:300])
        storage = storage_failure(exc)
        if storage is not None:
            return JSONResponse(
                {"detail": f"database cannot store writes: {storage}; retry after space is freed"},
                status_code=503,
                headers={"Retry-After": "60"},
            )
        return JSONResponse(
            {"detail": "database unavailable; retry later"},
            status_code=503,
            headers={"Retry-After": "5"},
        )

    @app.exception_handler(DataError)
    @app.exception_handler(IntegrityError)
    async def refused_value(_req: Request, exc: Exception) -> JSONResponse:
        # The database refused a value the request carried (SQLSTATE class 22: a NUL in a
        # string, a number out of range; class 23: a constraint). Validation at the door
        # should have caught it, so it is logged as our gap, but it is the client's data
        # that cannot be stored: a 4xx with the database's reason, never a 500 or a 503.
        reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0][:300]
        log.warning("database refused a value: %s", reason)
        status = 409 if isinstance(exc, IntegrityError) else 422
        return JSONResponse({"detail": f"the database refused a value: {reason}"}, status)

    @app.exception_handler(RequestValidationError)
    async def invalid(_req: Request, exc: RequestValidationError) -> Any:
        errors = [
            {"field": ".".join(str(p) for p in e.get("loc", ())), "error": e.get("msg", "")}
            for e in exc.errors()
        ]
        message = "; ".join(f"{e['field']}: {e['error']}" for e in errors) or "invalid request"
        if _wants_html(_req):
            from app.web.deps import error_page_user, templates

            # A page's bad query or form value: the same message, as a page.
            return templates.TemplateResponse(
                _req, "error.html",
                {"status_code": 422, "message": message, **error_page_user(_req)},
                status_code=422,
            )  # fmt: skip
        return JSONResponse({"detail": message, "errors": errors}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(req: Request, exc: StarletteHTTPException) -> Any:
        if req.url.path in OTLP_PATHS:
            # Raised before the route runs (401/403 from the key check): OTLP/HTTP says
            # a google.rpc.Status in the request's encoding, as the route's own answers.
            return status_response(
                wire=wire_format(req.headers.get("content-type")),
                status=exc.status_code,
                message=str(exc.detail),
                headers=exc.headers,
            )
        # A missed OTLP export (404, or 405 on a page's path such as /traces) names the path.
        hint = otlp_path_hint(req.method, req.url.path) if exc.status_code in (404, 405) else None
        if hint is not None:
            return JSONResponse({"detail": hint}, status_code=exc.status_code)
        if _wants_html(req):
            from app.web.deps import error_page_user, templates

            return templates.TemplateResponse(
                req,
                "error.html",
                {"status_code": exc.status_code, "message": exc.detail, **error_page_user(req)},
                status_code=exc.status_code,
            )
        return JSONResponse(
            {"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
        )


def _wants_html(req: Request) -> bool:
    path = req.url.path
    if path.startswith(("/api/", "/v1/", "/metrics", "/healthz", "/readyz", "/static/")):
        return False
    return "text/html" in req.headers.get("accept", "")
