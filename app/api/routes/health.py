"""Liveness and readiness."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlalchemy import text
from starlette.concurrency import run_in_threadpool

from app.migrate import is_at_head
from app.response_model import ResponseModel

router = APIRouter(tags=["health"])


class Ready(ResponseModel):
    status: str


class NotReady(ResponseModel):
    status: str
    reason: str


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", response_model=Ready, responses={503: {"model": NotReady}})
async def readyz(request: Request) -> Any:
    """Ready when the database answers, its schema is at the migrations' head, and
    writes are stored (a full disk leaves reads working: see ``app.storage_health``)."""
    state = request.app.state

    def check() -> tuple[bool, str]:
        try:
            with state.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception as exc:  # any driver error means "not ready", with the reason
            return False, f"database unreachable: {type(exc).__name__}"
        if not is_at_head(state.engine, state.settings.database_url):
            return (
                False,
                "database schema is not at the latest migration; run 'telltale db upgrade'",
            )
        problem = state.storage_health.problem()
        return (False, problem) if problem else (True, "ok")

    ok, reason = await run_in_threadpool(check)
    if ok:
        return Ready(status="ready")
    return JSONResponse({"status": "not ready", "reason": reason}, status_code=503)
