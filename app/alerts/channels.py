"""What each channel type receives for an alert event, and where it is posted.

Events are ``trigger`` (a new alert, or a repeat after ``repeat_interval``),
``acknowledge`` and ``resolve``. Payloads are built when the event happens and stored in
the outbox, so a retry sends exactly what the first attempt sent.
"""

from __future__ import annotations

from typing import Any

from app.alerts import sentences, slack
from app.alerts.context import AlertContext, iso
from app.models import Channel

CHANNEL_TYPES = ("webhook", "slack", "pagerduty", "alertmanager")
SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}
PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"
# Which events each type is told about: Alertmanager has no notion of acknowledgement.
EVENTS = {
    "webhook": ("trigger", "acknowledge", "resolve"),
    "slack": ("trigger", "acknowledge", "resolve"),
    "pagerduty": ("trigger", "acknowledge", "resolve"),
    "alertmanager": ("trigger", "resolve"),
}


def webhook_payload(ctx: AlertContext, event: str) -> dict[str, Any]:
    a = ctx.alert
    return {
        "version": "1",
        "event": event,
        "alert": {
            "id": a.id,
            "fingerprint": a.fingerprint,
            "state": a.state,
            "severity": a.severity,
            "failure_mode": a.failure_mode,
            "monitor": ctx.monitor_name,
            "project": ctx.project_name,
            "labels": ctx.labels,
            "title": ctx.title,
            "summary": a.summary,
            "evidence": a.evidence,
            "count": a.count,
            "first_fired_at": iso(a.first_fired_at),
            "last_fired_at": iso(a.last_fired_at),
            "acknowledged_at": iso(a.acknowledged_at),
            "resolved_at": iso(a.resolved_at),
        },
        "link": ctx.link,
    }


def pagerduty_payload(ctx: AlertContext, event: str, routing_key: str) -> dict[str, Any]:
    a = ctx.alert
    body: dict[str, Any] = {
        "routing_key": routing_key,
        "event_action": event,
        "dedup_key": a.fingerprint,
    }
    if event == "trigger":
        body["payload"] = {
            "summary": ctx.headline[:1024],
            "source": sentences.one_line(f"telltale/{ctx.project_name}"),
            "severity": a.severity,
            "timestamp": iso(a.last_fired_at),
            "component": sentences.one_line(ctx.monitor_name),
            "class": a.failure_mode,
            "custom_details": {
                "summary": a.summary,
                "link": ctx.link,
                "labels": ctx.labels,
                "count": a.count,
                "evidence": a.evidence,
            },
        }
        body["links"] = [{"href": ctx.link, "text": "Open in Telltale"}]
        body["client"] = "Telltale"
        body["client_url"] = ctx.link
    return body


def alertmanager_payload(ctx: AlertContext, event: str) -> list[dict[str, Any]]:
    a = ctx.alert
    item: dict[str, Any] = {
        "labels": ctx.labels,
        "annotations": {
            "summary": ctx.headline,
            "description": f"{a.summary}\n{ctx.link}",
            "link": ctx.link,
            "fingerprint": a.fingerprint,
        },
        "startsAt": iso(a.first_fired_at),
        "generatorURL": ctx.link,
    }
    if event == "resolve":
        item["endsAt"] = iso(a.resolved_at)
    return [item]


def target_url(channel: Channel) -> str:
    if channel.type == "alertmanager":
        url = channel.url.rstrip("/")
        return url if url.endswith("/api/v2/alerts") else url + "/api/v2/alerts"
    if channel.type == "pagerduty":
        return channel.url or PAGERDUTY_URL
    return channel.url


def build_payload(channel: Channel, ctx: AlertContext, event: str) -> Any:
    if channel.type == "webhook":
        return webhook_payload(ctx, event)
    if channel.type == "slack":
        return slack.message(ctx, event)
    if channel.type == "pagerduty":
        return pagerduty_payload(ctx, event, str((channel.config or {}).get("routing_key", "")))
    if channel.type == "alertmanager":
        return alertmanager_payload(ctx, event)
    raise ValueError(f"type: unknown channel type {channel.type!r}")


def item(channel: Channel, ctx: AlertContext, event: str) -> dict[str, Any]:
    """One alert event as a notification group keeps it (:mod:`app.alerts.groups`): the
    payload the channel's type takes for it on its own, a one-line text and the link."""
    verb = {"trigger": "Firing", "acknowledge": "Acknowledged", "resolve": "Resolved"}[event]
    a = ctx.alert
    return {
        "alert_id": a.id,
        "event": event,
        "text": f"{verb}: {ctx.headline}",
        "link": ctx.link,
        "payload": build_payload(channel, ctx, event),
    }
