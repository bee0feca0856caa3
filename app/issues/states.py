"""The state of an issue, read from what a person set and from its times.

Sentry's lifecycle, computed at read time (no job has to run for a state to be right):

- ``ignored`` / ``muted``: a person said so (muted: listed, never alerting; ignored: off
  the default list). They stay until a person changes them.
- ``resolved``: a person resolved it and nothing came since, or it has been quiet for
  :data:`QUIET` (no event since ``last_seen``).
- ``regressed``: it came back after it was resolved (``regressed_at``, set by the derive
  job when an event lands on a resolved or quiet issue), for :data:`RECENT` after that.
- ``new``: first seen less than :data:`RECENT` ago; else ``ongoing``.

>>> from datetime import datetime, timedelta, UTC
>>> now = datetime(2026, 12, 6, tzinfo=UTC)
>>> issue_state(status="open", first_seen=now - timedelta(hours=2), last_seen=now,
...             regressed_at=None, status_at=None, now=now)
'new'
>>> issue_state(status="open", first_seen=now - timedelta(days=9),
...             last_seen=now - timedelta(days=2), regressed_at=None, status_at=None, now=now)
'resolved'
"""

from __future__ import annotations

from datetime import datetime, timedelta

QUIET = timedelta(hours=24)  # no event for this long: resolved
RECENT = timedelta(hours=24)  # first seen (or back) within this: new (or regressed)
PERSON_STATES = ("open", "resolved", "ignored", "muted")  # what a person may set
STATES = ("new", "ongoing", "regressed", "resolved", "ignored", "muted")  # what is read


def issue_state(
    *,
    status: str,
    first_seen: datetime,
    last_seen: datetime,
    regressed_at: datetime | None,
    status_at: datetime | None,
    now: datetime,
) -> str:
    if status in ("ignored", "muted"):
        return status
    if status == "resolved" and (status_at is None or last_seen <= status_at):
        return "resolved"
    if now - last_seen >= QUIET:
        return "resolved"
    if regressed_at is not None and now - regressed_at < RECENT:
        return "regressed"
    return "new" if now - first_seen < RECENT else "ongoing"


def comes_back(*, status: str, status_at: datetime | None, last_seen: datetime,
               at: datetime) -> bool:  # fmt: skip
    """Whether an event at ``at`` reopens an issue: resolved by a person before it, or
    quiet for :data:`QUIET` before it."""
    if status == "resolved" and (status_at is None or at > status_at):
        return True
    return status == "open" and at - last_seen >= QUIET
