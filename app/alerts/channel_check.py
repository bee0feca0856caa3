"""A test notification for a channel: the payload its type gets for a real alert, marked as
a test, sent through the outbox (signed, retried) like every notification.

It carries no alert row (``alert_id`` is null) and is due at once, outside the channel's
group, so it neither waits for nor joins real alerts.
"""

from __future__ import annotations

from datetime import datetime

from app.alerts import channels, groups
from app.alerts.context import AlertContext
from app.models import Alert, Channel, Notification

TEST_SUMMARY = "Test notification from Telltale: this channel receives alerts. Nothing is wrong."


def queue_test(
    session: object, channel: Channel, *, project_name: str, public_url: str, now: datetime
) -> Notification:
    """Queue one test ``trigger`` for ``channel`` (the caller commits)."""
    alert = Alert(
        id=0, project_id=channel.project_id, fingerprint="telltale-test-" + str(channel.id),
        failure_mode="TEST", severity="info", labels={"test": "true"}, state="firing",
        summary=TEST_SUMMARY, evidence={"test": True}, count=1, first_fired_at=now,
        last_fired_at=now,
    )  # fmt: skip
    ctx = AlertContext(
        alert=alert, monitor_name="channel test", project_name=project_name, public_url=public_url
    )
    item = {**channels.item(channel, ctx, "trigger"), "alert_id": None}
    row = Notification(
        project_id=channel.project_id, channel_id=channel.id, alert_id=None, event="trigger",
        items=[item], payload=groups.combine(channel.type, [item], key="test"),
        due_at=now, next_attempt_at=now, collecting=False, created_at=now,
    )  # fmt: skip
    session.add(row)  # type: ignore[attr-defined]
    return row
