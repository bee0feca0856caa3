"""How an open or closed alert's state reads on the alerts list and the alert page:
"firing for 2h 05m", "open 13h 52m · acknowledged just now by on-call",
"was open for 3h 10m".

An acknowledged alert is still open, so its span counts from its first firing as a firing
one's does; the acknowledgement is a moment of its own, said relative to now with the
name of the key that made it. "acknowledged for 13h 52m" read as if someone had held it
for thirteen hours when they had just taken it. The alert records its acknowledger as
``key:<id>``; keys are never deleted or renamed (only revoked), so that id names the key
now as it did then, without a copy of the name in the alert or its events.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Alert, ApiKey

KEY_ACTOR = "key:"


def ago(delta: timedelta) -> str:
    """How long ago, coarsely, as a person says it.

    >>> [ago(timedelta(seconds=s)) for s in (20, 300, 13 * 3600 + 3000, 3 * 86400)]
    ['just now', '5 min ago', '13 h ago', '3 d ago']
    """
    minutes = int(delta.total_seconds() // 60)
    if minutes < 1:
        return "just now"
    if minutes < 60:
        return f"{minutes} min ago"
    if minutes < 48 * 60:
        return f"{minutes // 60} h ago"
    return f"{minutes // (24 * 60)} d ago"


def actor_names(session: Session, *, project_id: int, actors: Iterable[str]) -> dict[str, str]:
    """Each ``key:<id>`` actor of ``project_id`` with its key's name (``key tt_AbCdEfG…``
    when the key has none); actors that are no key of the project are left out."""
    ids = {
        int(a.removeprefix(KEY_ACTOR))
        for a in actors
        if a.startswith(KEY_ACTOR) and a.removeprefix(KEY_ACTOR).isdigit()
    }
    if not ids:
        return {}
    rows = session.execute(
        select(ApiKey.id, ApiKey.name, ApiKey.prefix).where(
            ApiKey.id.in_(sorted(ids)), ApiKey.project_id == project_id
        )
    )
    return {f"{KEY_ACTOR}{i}": name or f"key {prefix}…" for i, name, prefix in rows}


def state_line(alert: Alert, *, span: str, names: dict[str, str], now: datetime) -> str:
    """``alert``'s state in words, ``span`` being its open span (``open_span``)."""
    if alert.state == "resolved":
        return f"was open for {span}"
    if alert.state == "acknowledged" and alert.acknowledged_at is not None:
        who = alert.acknowledged_by or ""
        by = names.get(who, who)
        return f"open {span} · acknowledged {ago(now - alert.acknowledged_at)}" + (
            f" by {by}" if by else ""
        )
    return f"{alert.state} for {span}"
