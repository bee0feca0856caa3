"""Liveness and readiness, which must answer while every request thread and pooled
connection is busy: ``/healthz`` runs on the event loop and touches nothing; ``/readyz``
probes with its own engine (:mod:`app.engines`) on a thread outside the request threads,
and answers 503 with the reason when the database does not answer within
:data:`READY_TIMEOUT_S`."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlalchemy import text

from app.migrate import is_at_head
from app.response_model import ResponseModel

router = APIRouter(tags=["health"])


class Ready(ResponseModel):
    status: str


class NotReady(ResponseModel):
    status: str
    reason: str


READY_TIMEOUT_S = 5.0


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", response_model=Ready, responses={503: {"model": NotReady}})
async def readyz(request: Request) -> Any:
    """Ready when the database answers, its schema is at the migrations' head, and
    writes are stored (a full disk leaves reads working: see ``app.storage_health``)."""
    state = request.app.state
    engine = state.health_engine

    def check() -> tuple[bool, str]:
        try:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception as exc:  # any driver error means "not ready", with the reason
            return False, f"database unreachable: {type(exc).__name__}"
        if not is_at_head(engine, state.settings.database_url):
            return (
                False,
                "database schema is not at the latest migration; run 'telltale db upgrade'",
            )
        problem = state.storage_health.problem()
        return (False, problem) if problem else (True, "ok")

    try:
        # asyncio's own executor, not the request threads a load may have taken.
        ok, reason = await asyncio.wait_for(asyncio.to_thread(check), READY_TIMEOUT_S)
    except TimeoutError:
        ok, reason = False, f"database did not answer within {READY_TIMEOUT_S:g} s"
    if ok:
        return Ready(status="ready")
    return JSONResponse({"status": "not ready", "reason": reason}, status_code=503)
