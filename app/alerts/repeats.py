"""Re-notify open, unacknowledged alerts whose ``repeat_interval`` has passed, on a timer.

Alertmanager re-sends a firing alert every ``repeat_interval`` whether or not its rule
re-evaluated to true in between. Before this job a reminder waited for the next *fired*
run; with a frozen baseline an alert stays open through runs that do not fire (the last
few of a failure that is fading, say), so the reminder must not depend on them. An alert
with an active silence is re-checked every tick and announced once its silence ends.
A ``repeat_interval_seconds`` of 0 means "never repeat".
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, select

from app.alerts import announce
from app.db import write_session
from app.models import Alert, Monitor
from app.models.base import utcnow

REPEAT_EVERY_SECONDS = 60


def renotify_due(engine: Engine, *, now: datetime, public_url: str = "") -> int:
    """Send ``trigger`` again for every firing alert past its monitor's repeat interval."""
    sent = 0
    with write_session(engine) as session:
        rows = session.execute(
            select(Alert, Monitor.repeat_interval_seconds)
            .join(Monitor, Monitor.id == Alert.monitor_id)
            .where(Alert.state == "firing", Monitor.repeat_interval_seconds > 0)
            .order_by(Alert.id)
        ).all()
        for alert, repeat_s in rows:
            last = alert.last_notified_at
            due = last is None or now - last >= timedelta(seconds=repeat_s)
            if not (due or alert.silenced):
                continue
            before = alert.last_notified_at
            announce.send(session, alert, event="trigger", now=now, public_url=public_url)
            sent += int(alert.last_notified_at != before)
    return sent


def repeat_job(engine: Engine, sessionmaker: Any, settings: Any) -> int:
    """The scheduler's periodic entry point (:func:`app.scheduler.jobs.periodic_jobs`).

    ``settings`` is the app's ``Settings`` (untyped here: app.settings imports app.alerts).
    """
    return renotify_due(engine, now=utcnow(), public_url=settings.public_url)
