"""Create (or find again) what the demo needs: project, keys, monitors, queues, channel.

Everything is idempotent by name, so a second demo on the same database reuses the
project, its seven default monitors, the labeling queues and the webhook channel (whose
URL and secret are pointed at this run's receiver, checked against the demo's outbound
policy like any channel URL). Keys are new on every run: a key is
stored hashed and can be shown only when it is created.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, func, select, update
from sqlalchemy.orm import Session

from app.alerts.outbound import OutboundPolicy
from app.alerts.schemas import ChannelCreate
from app.alerts.store import create_channel
from app.demo.labeling import QUEUES, ensure_queues
from app.keys import create_key, get_or_create_project
from app.models import Channel, Embedding, Monitor, Trace
from app.monitors.defaults import WINDOW, create_defaults

PROJECT = "demo"
# The defaults whose 8 h windows read a day of baseline (app.monitors.defaults).
DAY_BASELINE_MODES = ("FM-4", "OUTCOME")
ROLES = ("admin", "ingest", "annotate")
CHANNEL = "demo receiver"


# The demo's monitors are not due on the real clock while it serves (see hold_scheduled_runs).
HELD_UNTIL = datetime(9999, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class DemoProject:
    project_id: int
    keys: dict[str, str]
    monitors: list[tuple[int, str]]
    queues: tuple[str, ...]
    earliest_data: datetime | None


def prepare(
    engine: Engine, *, receiver_url: str, secret: str, outbound: OutboundPolicy
) -> DemoProject:
    with Session(engine) as session:
        keys = {
            role: create_key(session, project_name=PROJECT, role=role, name=f"demo {role}")
            for role in ROLES
        }
        session.commit()
        project_id = get_or_create_project(session, name=PROJECT).id
        monitors = create_defaults(session, project_id=project_id)
        compress_windows(monitors)
        hold_scheduled_runs(session, project_id)
        session.commit()
        pairs = [(m.id, m.failure_mode) for m in monitors]
        ensure_queues(session, project_id=project_id)
        _point_channel(session, project_id, receiver_url, secret, outbound)
        session.commit()
        earliest = _earliest_data(session, project_id)
    return DemoProject(project_id, keys, pairs, QUEUES, earliest)


def compress_windows(monitors: list[Monitor]) -> None:
    """FM-4 and OUTCOME read the others' 2-hour window against 4 hours in the demo.

    Their defaults (8 hours against a day, for labels that arrive late) give a first
    verdict 24 h after the first trace, and no monitor speaks before a whole reference of
    data (app.monitors.decision.baseline.young_reason): the demo's compressed day would
    show them waiting throughout. The summary says so.
    """
    for m in monitors:
        if m.failure_mode in DAY_BASELINE_MODES:
            m.selection = {**(m.selection or {}), **WINDOW}


def _point_channel(
    session: Session, project_id: int, url: str, secret: str, outbound: OutboundPolicy
) -> None:
    channel = session.scalar(
        select(Channel).where(Channel.project_id == project_id, Channel.name == CHANNEL)
    )
    if channel is None:
        body = ChannelCreate.model_validate(
            {"type": "webhook", "name": CHANNEL, "url": url, "secret": secret}
        )
        create_channel(session, project_id=project_id, body=body, outbound=outbound)
    else:
        outbound.check_url(url)
        channel.url, channel.secret, channel.enabled = url, secret, True


def _earliest_data(session: Session, project_id: int) -> datetime | None:
    firsts = [
        session.scalar(select(func.min(Trace.started_at)).where(Trace.project_id == project_id)),
        session.scalar(
            select(func.min(Embedding.created_at)).where(Embedding.project_id == project_id)
        ),
    ]
    found = [t if t.tzinfo else t.replace(tzinfo=UTC) for t in firsts if t is not None]
    return min(found) if found else None


def timeline_start(*, now: datetime, hours: float, earliest_data: datetime | None) -> datetime:
    """Where this run's simulated period starts: it ends at the hour before ``now``, or
    before the project's oldest data when an earlier demo stored some (a second run
    replays an earlier, disjoint period, so its windows never mix with the first's data,
    and everything it sends is in the past, where notifications are due at once)."""
    end = now.replace(minute=0, second=0, microsecond=0)
    if earliest_data is not None:
        end = min(end, earliest_data.replace(minute=0, second=0, microsecond=0))
    return end - timedelta(hours=hours)


def hold_scheduled_runs(session: Session, project_id: int) -> None:
    """Keep the scheduler's real-clock runs off the demo's monitors while the demo serves.

    The demo runs them itself on its simulated clock, over data that end at the hour
    before it started. A real-clock run at start-up read empty windows (the replay had sent
    nothing yet) and, being the latest run, put "insufficient data: no traces" on every
    card over the alerts the replay had just raised; later ones read the replay's last
    hours thinning out. Held, the cards show what the summary says: the replay's last
    verdicts and its alerts. ``run now`` still runs them on the wall clock.
    """
    session.execute(
        update(Monitor).where(Monitor.project_id == project_id).values(next_run_at=HELD_UNTIL)
    )


def release_scheduled_runs(engine: Engine, project_id: int) -> None:
    """When the demo stops: its monitors are due again, for a ``telltale serve`` on this
    database to run them on the real clock."""
    with Session(engine) as session:
        session.execute(
            update(Monitor)
            .where(Monitor.project_id == project_id, Monitor.next_run_at == HELD_UNTIL)
            .values(next_run_at=None)
        )
        session.commit()
