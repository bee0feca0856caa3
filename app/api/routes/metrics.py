"""``GET /metrics``: the Prometheus text exposition format.

It names every project's monitors and queues, so it is not open to the network: with
``TELLTALE_METRICS_TOKEN`` set, Prometheus sends it as a bearer token
(``authorization.credentials_file`` in a scrape config); unset, only clients on the
loopback interface are answered (the demo, a sidecar, a node-local agent).
"""

from __future__ import annotations

import hmac
import ipaddress

from fastapi import APIRouter, HTTPException, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.concurrency import run_in_threadpool

from app import metrics_db
from app.api.deps import key_from_request

router = APIRouter(tags=["metrics"])


def _is_loopback(host: str | None) -> bool:
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_scraper(request: Request) -> None:
    """401 without the configured token; 403 for a non-loopback client when none is set."""
    token = request.app.state.settings.metrics_token
    if token is not None:
        sent = key_from_request(request) or ""
        if not hmac.compare_digest(sent.encode(), token.get_secret_value().encode()):
            raise HTTPException(
                401,
                "metrics need 'Authorization: Bearer <TELLTALE_METRICS_TOKEN>'",
                headers={"WWW-Authenticate": "Bearer"},
            )
    elif not _is_loopback(request.client.host if request.client else None):
        raise HTTPException(
            403, "metrics answer only loopback clients unless TELLTALE_METRICS_TOKEN is set"
        )


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}}},
)
async def metrics(request: Request) -> Response:
    check_scraper(request)

    def render() -> bytes:
        with request.app.state.sessionmaker() as session:
            metrics_db.refresh(session)
        return generate_latest()

    return Response(await run_in_threadpool(render), media_type=CONTENT_TYPE_LATEST)
