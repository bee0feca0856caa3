"""Notification groups with Alertmanager's timing: ``group_wait`` and ``group_interval``.

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
state: :func:`app.alerts.group_payloads.with_item`) and its payload is rebuilt, in the
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
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.alerts import group_payloads
from app.models import Channel, Notification


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
    """Put one alert event (``group_payloads.item``) into its group's pending flush."""
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
    if channel.type in group_payloads.MERGED_TYPES and collecting:
        row = collecting[0]
        row.items = group_payloads.with_item(row.items or [], item)
        row.payload = group_payloads.combine(channel.type, row.items, key=group_key(channel))
        row.event = group_payloads.group_event(row.items)
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
        payload=group_payloads.combine(channel.type, [item], key=group_key(channel)),
        due_at=due,
        next_attempt_at=due,
        collecting=due > now,
        created_at=now,
    )
    session.add(row)
    return row
