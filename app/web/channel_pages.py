"""Settings · channels (admin): list (masked), create, delete, send a test.

Creation goes through :func:`app.alerts.store.create_channel` with the server's outbound
policy, as ``POST /api/v1/channels`` does; a refused URL or value is a 422 page naming the
field. A test goes out through the outbox (:mod:`app.alerts.channel_check`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Form
from sqlalchemy.orm import Session

from app.alerts import store as alert_store
from app.alerts.channel_check import queue_test
from app.alerts.outbound import OutboundPolicy, OutboundRefused
from app.alerts.schemas import ChannelCreate
from app.db import write_session
from app.deps import EngineDep, Int4Id, SessionDep
from app.models import Channel
from app.models.base import utcnow
from app.web.deps import WebContext, WebDep
from app.web.form_values import FormError, parse_form
from app.web.settings_pages import act, act_on_row, require_admin, settings_page

router = APIRouter(prefix="/settings/channels", include_in_schema=False)


def _render(web: WebContext, session: Any, **extra: Any) -> Any:
    rows = alert_store.list_channels(session, project_id=web.principal.project_id)
    return settings_page(
        web, session, "channels", channels=[alert_store.masked(c) for c in rows], **extra
    )


@router.get("")
def channels_page(web: WebDep, session: SessionDep) -> Any:
    require_admin(web)
    return _render(web, session)


@router.post("")
def create_channel(
    web: WebDep, session: SessionDep, engine: EngineDep, csrf: str = Form(""),
    type: str = Form(""), url: str = Form(""), secret: str = Form(""),
    routing_key: str = Form(""), min_severity: str = Form("info"),
) -> Any:  # fmt: skip
    typed = {"type": type, "url": url, "min_severity": min_severity}

    def action() -> str:
        body = parse_form(ChannelCreate, {
            "type": type, "url": url.strip(), "secret": secret or None,
            "routing_key": routing_key or None, "min_severity": min_severity,
        })  # fmt: skip
        policy = OutboundPolicy.from_allow(web.request.app.state.settings.outbound_allow)
        try:
            with write_session(engine) as s:
                made = alert_store.create_channel(
                    s, project_id=web.principal.project_id, body=body, outbound=policy
                )
                name = made.name
        except OutboundRefused as exc:
            raise FormError(f"url: {exc}") from None
        except ValueError as exc:
            raise FormError(str(exc)) from None
        return f"Channel {name} created; send it a test to check it receives."

    return act(web, session, "channels", csrf, action, typed, renderer=_render)


@router.post("/{channel_id}/test")
def send_test(
    channel_id: Int4Id, web: WebDep, session: SessionDep, engine: EngineDep, csrf: str = Form("")
) -> Any:
    def change(s: Session, channel: Channel) -> str:
        queue_test(
            s, channel, project_name=web.principal.project_name,
            public_url=web.request.app.state.settings.public_url, now=utcnow(),
        )  # fmt: skip
        return f"Test queued for channel {channel_id}; it goes out with the next outbox round."

    return act_on_row(
        web, session, "channels", csrf, engine, Channel, "channel", channel_id, change, _render
    )


@router.post("/{channel_id}/delete")
def delete_channel(
    channel_id: Int4Id, web: WebDep, session: SessionDep, engine: EngineDep, csrf: str = Form("")
) -> Any:
    def change(s: Session, channel: Channel) -> str:
        s.delete(channel)
        return f"Channel {channel_id} deleted."

    return act_on_row(
        web, session, "channels", csrf, engine, Channel, "channel", channel_id, change, _render
    )
