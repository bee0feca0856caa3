"""Notification channels of the project: webhook, Slack, PagerDuty, Alertmanager."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Response
from fastapi.exceptions import RequestValidationError

from app.alerts import store
from app.alerts.outbound import OutboundRefused
from app.alerts.schemas import ChannelCreate, ChannelList, ChannelOut
from app.api.deps import AdminKey, EngineDep, Int4Id, OutboundDep, ReadKey, SessionDep
from app.api.errors import found
from app.db import project_row, write_session
from app.models import Channel

router = APIRouter(prefix="/api/v1/channels", tags=["channels"])


@router.get("")
def list_channels(principal: ReadKey, session: SessionDep) -> ChannelList:
    rows = store.list_channels(session, project_id=principal.project_id)
    return ChannelList(channels=[store.masked(c) for c in rows])


@router.post("", status_code=201)
def create(
    body: ChannelCreate, principal: AdminKey, engine: EngineDep, outbound: OutboundDep
) -> ChannelOut:
    """``{"type", "url", "secret"?, "routing_key"? (pagerduty), "min_severity"?,
    "failure_modes"?, "group_wait_seconds"? (30), "group_interval_seconds"? (300)}``:
    the alerts routed here are sent as one group, Alertmanager-style
    (:mod:`app.alerts.groups`). The URL must reach a public address or one allowed by
    ``TELLTALE_OUTBOUND_ALLOW`` (docs: alert-routing). URL, secret and routing key are
    write-only: the answer, like every listing, shows them masked."""
    try:
        with write_session(engine) as session:
            channel = store.create_channel(
                session, project_id=principal.project_id, body=body, outbound=outbound
            )
    except OutboundRefused as exc:  # the same 422 shape as the URL's syntax errors
        error = {"loc": ("body", "url"), "msg": f"Value error, {exc}", "type": "value_error"}
        raise RequestValidationError([error]) from None
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    return store.masked(channel)


@router.delete("/{channel_id}", status_code=204)
def delete(channel_id: Int4Id, principal: AdminKey, engine: EngineDep) -> Response:
    """Delete the channel and its undelivered notifications."""
    with write_session(engine) as session:
        channel = project_row(session, Channel, channel_id, project_id=principal.project_id)
        session.delete(found(channel, "channel", channel_id))
    return Response(status_code=204)
