"""Notification groups: when each is sent (Alertmanager's ``group_wait`` and ``group_interval``) and what it carries.

A *group* is the alerts of one project routed to one channel: the group key is
``<project_id>/<channel_id>``. A channel is Telltale's receiver (Alertmanager's route +
receiver), and grouping by nothing finer (Alertmanager's ``group_by: []``) is what
on-call wants from one project: the alerts that open together, of every monitor, in one
message. Routing (severity, failure modes) already picks which alerts reach a channel.

Timing, configured on the channel (``group_wait_seconds``, default 30;
``group_interval_seconds``, default 300; both 0 = every event at once, as before 0012):

* the first event of a group with nothing sent in the last ``group_interval`` waits
  ``group_wait``, so the alerts that open with it go out in the same notification;
* after a group's notification was due, its next one is due no sooner than
  ``group_interval`` after it, however many events came in between; those events
  (new alerts, repeats, acknowledgements, resolutions: Alertmanager sends a resolution in
  the next group interval too) all wait for it and go out together;
* ``repeat_interval`` stays the monitor's: the reminder it triggers
  (:mod:`app.alerts.repeats`) is one more event of the group.

A group is quiet again once ``group_interval`` passed without an event, and its next event
waits ``group_wait`` (Alertmanager keeps ticking every interval while alerts are active,
so it may send such an event up to one interval later; never earlier than here).

Durability: the waiting is in the outbox row, nowhere else. A group's pending flush is
one ``notifications`` row with ``due_at`` = ``next_attempt_at`` = the flush time and
``collecting`` true; the sender only claims due rows, so a restart loses nothing and
changes no timing. Events join the collecting row (an alert appears once, in its latest
state: :func:`with_item`) and its payload is rebuilt, in the
transaction of the alert transition. The sender's claim clears ``collecting`` in the
same statement that leases the row, so a body once posted never changes: retries send
the same bytes with the same ``X-Telltale-Delivery`` id (at-least-once, receivers
dedupe). An event that finds no collecting row starts a new one, due at once when the
group's timing allows; a row due at once is not collecting (it is sent alone, as before).

PagerDuty takes one event per request: its group is one collecting row per alert, all
due at the group's time.

Concurrency: enqueuing locks the channel row (PostgreSQL ``FOR UPDATE``; SQLite's
``BEGIN IMMEDIATE`` serialises writers), so two transitions of one group never open two
flushes; the collecting row is read ``FOR UPDATE``, so a claim that got there first
(``SKIP LOCKED``) makes this event start the next flush instead of joining a sent one.

**What a group carries.** A channel receives a *group* of alert events in one notification.

Each event of a group is kept as an item: the single-alert payload the channel type gets
(:func:`app.alerts.channels.item`: :func:`~app.alerts.channels.build_payload`, built when
the event happened, plus a one-line text and the alert's link). A group notification is
built from its items:

* ``webhook``: the single-alert fields (``version``, ``event``, ``alert``, ``link``) stay
  as they were when the group holds one alert, so existing receivers keep working; every
  notification adds ``alerts`` (each ``{"event", "alert", "link"}``) and ``group``
  (``key``, ``size``). With several alerts ``event`` is their shared event or ``mixed``
  and ``alert``/``link`` are absent (no alert is "the" alert of a group).
* ``slack``: one message; with one alert exactly the single-alert message, with several a
  header and one line per alert (Slack caps a message at 50 blocks: the rest is counted).
* ``alertmanager``: its API takes a list of alerts already; the items' lists joined.
* ``pagerduty``: Events API v2 takes one event per request, so its groups are one outbox
  row per alert (see above); the payload is the item's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.alerts import slack
from app.models import Channel, Notification

MERGED_TYPES = frozenset({"webhook", "slack", "alertmanager"})


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
        return slack.group_message(items)
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


def group_key(channel: Channel) -> str:
    return f"{channel.project_id}/{channel.id}"


def flush_due(
    *, last_due: datetime | None, now: datetime, wait_s: float, interval_s: float
) -> datetime:
    """When a group's next notification is due, given when its last one was due.

    >>> from datetime import UTC
    >>> t0 = datetime(2025, 3, 3, 12, tzinfo=UTC)
    >>> flush_due(last_due=None, now=t0, wait_s=30, interval_s=300).second
    30
    >>> flush_due(last_due=t0, now=t0 + timedelta(seconds=60), wait_s=30, interval_s=300).minute
    5
    >>> flush_due(last_due=t0, now=t0 + timedelta(seconds=400), wait_s=0, interval_s=300) > t0
    True
    """
    if last_due is not None:
        next_tick = last_due + timedelta(seconds=interval_s)
        if now < next_tick:
            return next_tick
    return now + timedelta(seconds=wait_s)


def enqueue(
    session: Session, channel: Channel, *, item: dict[str, Any], now: datetime
) -> Notification:
    """Put one alert event (``item``) into its group's pending flush."""
    # Serialise the channel's enqueues (no-op on SQLite, whose writers are serialised).
    session.execute(select(Channel.id).where(Channel.id == channel.id).with_for_update())
    collecting = list(
        session.scalars(
            select(Notification)
            .where(
                Notification.channel_id == channel.id,
                Notification.status == "pending",
                Notification.collecting.is_(True),
            )
            .order_by(Notification.id)
            .with_for_update()
        )
    )
    if channel.type in MERGED_TYPES and collecting:
        row = collecting[0]
        row.items = with_item(row.items or [], item)
        row.payload = combine(channel.type, row.items, key=group_key(channel))
        row.event = group_event(row.items)
        return row
    if collecting:  # one row per alert: replace this alert's event, or join the flush
        due = collecting[0].due_at
        for row in collecting:
            if row.items and row.items[0]["alert_id"] == item["alert_id"]:
                session.delete(row)
    else:
        last_due = session.scalar(
            select(func.max(Notification.due_at)).where(Notification.channel_id == channel.id)
        )
        due = flush_due(
            last_due=last_due,
            now=now,
            wait_s=channel.group_wait_seconds,
            interval_s=channel.group_interval_seconds,
        )
    row = Notification(
        project_id=channel.project_id,
        channel_id=channel.id,
        alert_id=item["alert_id"],
        event=item["event"],
        items=[item],
        payload=combine(channel.type, [item], key=group_key(channel)),
        due_at=due,
        next_attempt_at=due,
        collecting=due > now,
        created_at=now,
    )
    session.add(row)
    return row
