"""What a channel receives for a *group* of alert events sent in one notification.

Each event of a group is kept as an item: the single-alert payload the channel type gets
(:func:`app.alerts.channels.build_payload`, built when the event happened) plus a one-line
text and the alert's link. A group notification is built from its items:

* ``webhook``: the single-alert fields (``version``, ``event``, ``alert``, ``link``) stay
  as they were when the group holds one alert, so existing receivers keep working; every
  notification adds ``alerts`` (each ``{"event", "alert", "link"}``) and ``group``
  (``key``, ``size``). With several alerts ``event`` is their shared event or ``mixed``
  and ``alert``/``link`` are absent (no alert is "the" alert of a group).
* ``slack``: one message; with one alert exactly the single-alert message, with several a
  header and one line per alert (Slack caps a message at 50 blocks: the rest is counted).
* ``alertmanager``: its API takes a list of alerts already; the items' lists joined.
* ``pagerduty``: Events API v2 takes one event per request, so its groups are one outbox
  row per alert (:mod:`app.alerts.grouping`); the payload is the item's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.alerts import channels
from app.models import Channel

MERGED_TYPES = frozenset({"webhook", "slack", "alertmanager"})
SLACK_MAX_LINES = 45  # header + lines + overflow note stay under Slack's 50 blocks


def item(channel: Channel, ctx: channels.AlertContext, event: str) -> dict[str, Any]:
    """One alert event of a group, with the payload its channel type takes on its own."""
    verb = {"trigger": "Firing", "acknowledge": "Acknowledged", "resolve": "Resolved"}[event]
    a = ctx.alert
    return {
        "alert_id": a.id,
        "event": event,
        "text": f"{verb}: [{a.severity.upper()}] {ctx.title}: {a.summary}",
        "link": ctx.link,
        "payload": channels.build_payload(channel, ctx, event),
    }


def with_item(items: Sequence[dict[str, Any]], new: dict[str, Any]) -> list[dict[str, Any]]:
    """The items with ``new`` in place of an earlier event of its alert (latest state wins,
    as Alertmanager sends each alert of a group once, as it is at the flush)."""
    out = [i for i in items if i["alert_id"] != new["alert_id"]]
    out.append(new)
    return out


def group_event(items: Sequence[dict[str, Any]]) -> str:
    events = {i["event"] for i in items}
    return events.pop() if len(events) == 1 else "mixed"


def combine(channel_type: str, items: Sequence[dict[str, Any]], *, key: str) -> Any:
    """The body of one notification for ``items`` (oldest first) of the group ``key``."""
    if channel_type == "webhook":
        return _webhook(items, key)
    if channel_type == "slack":
        return _slack(items)
    if channel_type == "alertmanager":
        return [alert for i in items for alert in i["payload"]]
    if len(items) != 1:
        raise ValueError(f"type: a {channel_type} notification carries one alert")
    return items[0]["payload"]


def _webhook(items: Sequence[dict[str, Any]], key: str) -> dict[str, Any]:
    if len(items) == 1:
        body = dict(items[0]["payload"])
    else:
        body = {"version": "1", "event": group_event(items)}
    body["group"] = {"key": key, "size": len(items)}
    body["alerts"] = [
        {"event": i["event"], "alert": i["payload"]["alert"], "link": i["payload"]["link"]}
        for i in items
    ]
    return body


def _slack(items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    if len(items) == 1:
        return dict(items[0]["payload"])
    title = f"{len(items)} Telltale alerts"
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": title}}
    ]
    for i in items[:SLACK_MAX_LINES]:
        line = f"{i['text']} (<{i['link']}|open>)"
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": line[:3000]}})
    if len(items) > SLACK_MAX_LINES:
        more = f"… and {len(items) - SLACK_MAX_LINES} more"
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": more}})
    text = f"{title}: " + "; ".join(i["text"] for i in items)
    return {"text": text[:3000], "blocks": blocks}
