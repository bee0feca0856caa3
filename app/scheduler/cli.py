"""``telltale scheduler``: the scheduler and the outbox sender alone, for scale-out.

Run any number of them against one PostgreSQL database: each monitor still runs once per
interval (database lease), and notifications are claimed with ``SKIP LOCKED``.
SIGTERM/SIGINT stop them cleanly (a running monitor finishes and is persisted).
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading

log = logging.getLogger("telltale.scheduler")


HELP = "run the monitor scheduler and the notification sender (no API)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tick", type=float, default=5.0, help="seconds between due-monitor checks")
    p.add_argument(
        "--min-interval",
        type=float,
        default=None,
        help="seconds: monitors stored with a shorter interval run at this one "
        "(default: the API's floor, 60)",
    )
    p.add_argument("--outbox-poll", type=float, default=1.0, help="seconds between outbox passes")
    p.add_argument("--backoff-base", type=float, default=2.0, help="first retry delay, seconds")
    p.add_argument("--backoff-max", type=float, default=900.0, help="largest retry delay, seconds")
    p.add_argument(
        "--claim-lease",
        type=float,
        default=120.0,
        help="seconds a claimed notification stays reserved for this process",
    )
    p.add_argument("--no-monitors", action="store_true", help="run only the outbox sender")
    p.add_argument("--no-outbox", action="store_true", help="run only the monitors")
    p.add_argument("--migrate", action="store_true", help="upgrade the database first")
    p.add_argument(
        "--heartbeat",
        metavar="FILE",
        help="touch FILE every few seconds while the database answers and every service runs "
        "(a container healthcheck reads its age)",
    )


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from app import migrate
    from app.alerts.outbound import OutboundPolicy
    from app.alerts.outbox import OUTBOX_BACKOFF, DeliveryPolicy, OutboxSender
    from app.db import make_engine, make_sessionmaker
    from app.monitors.schemas import MIN_INTERVAL_SECONDS
    from app.scheduler.heartbeat import Heartbeat
    from app.scheduler.jobs import periodic_jobs
    from app.scheduler.service import SchedulerService
    from app.settings import get_settings

    settings = get_settings()
    if settings.is_sqlite or args.migrate:
        migrate.upgrade(settings.database_url)
    engine = make_engine(settings.database_url, pool_size=settings.db_pool_size)
    services: list[SchedulerService | OutboxSender] = []
    if not args.no_monitors:
        services.append(
            SchedulerService(
                settings,
                engine,
                make_sessionmaker(engine),
                jobs=periodic_jobs(),
                tick_seconds=args.tick,
                min_interval_s=args.min_interval or MIN_INTERVAL_SECONDS,
            )
        )
    if not args.no_outbox:
        retry = replace(
            OUTBOX_BACKOFF, backoff_base_s=args.backoff_base, backoff_max_s=args.backoff_max
        )
        policy = DeliveryPolicy(retry=retry, claim_lease_s=args.claim_lease)
        outbound = OutboundPolicy.from_allow(settings.outbound_allow)
        services.append(
            OutboxSender(engine, policy=policy, poll_interval_s=args.outbox_poll, outbound=outbound)
        )
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    for service in services:
        service.start()
    log.info("telltale scheduler running: %s", ", ".join(s.name for s in services) or "nothing")
    beat = Heartbeat(args.heartbeat, engine, services) if args.heartbeat else None
    try:
        while not stop.wait(1.0):
            if beat is not None:
                beat.maybe_touch()
    finally:
        for service in reversed(services):
            service.stop()
        engine.dispose()
    log.info("telltale scheduler stopped")
    return 0
