"""``GET /metrics``: the Prometheus text exposition format (unauthenticated, like most
exporters; put it behind the network boundary Prometheus scrapes from)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.concurrency import run_in_threadpool

from app import metrics_db

router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    def render() -> bytes:
        with request.app.state.sessionmaker() as session:
            metrics_db.refresh(session)
        return generate_latest()

    return Response(await run_in_threadpool(render), media_type=CONTENT_TYPE_LATEST)
