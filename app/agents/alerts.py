"""Which open alerts concern which agent.

An alert names an agent in its labels (a rule grouped or filtered by agent) or through its
monitor's data selection (a monitor watching one agent); one that names none is about the
whole project and is counted apart. Open means firing or acknowledged. A project has tens of
open alerts, not thousands, so they are read once and attributed here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Alert, Monitor

OPEN = ("firing", "acknowledged")
MAX_OPEN = 1000  # read at most this many (newest first)


@dataclass(frozen=True)
class OpenAlert:
    id: int
    agent: str | None
    severity: str
    state: str
    summary: str
    since: datetime


def open_alerts(session: Session, *, project_id: int) -> list[OpenAlert]:
    """The project's open alerts, newest first, each with the agent it names (or None)."""
    rows = session.execute(
        select(Alert.id, Alert.labels, Monitor.selection, Alert.severity, Alert.state,
               Alert.summary, Alert.first_fired_at)
        .outerjoin(Monitor, Monitor.id == Alert.monitor_id)
        .where(Alert.project_id == project_id, Alert.state.in_(OPEN))
        .order_by(Alert.first_fired_at.desc(), Alert.id.desc())
        .limit(MAX_OPEN)
    )  # fmt: skip
    out = []
    for aid, labels, selection, severity, state, summary, since in rows:
        agent = (labels or {}).get("agent") or (selection or {}).get("agent")
        out.append(OpenAlert(int(aid), str(agent) if agent else None, severity, state,
                             summary or "", since))  # fmt: skip
    return out


def count_by_agent(alerts: list[OpenAlert]) -> Counter[str | None]:
    """Open alerts per agent named (``None``: the project's, naming no agent)."""
    return Counter(a.agent for a in alerts)
