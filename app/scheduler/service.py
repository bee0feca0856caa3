"""The scheduler service: APScheduler runs due monitors and the periodic jobs it is given.

One ``monitors`` job ticks every few seconds, finds the monitors whose ``next_run_at`` has
come, claims each with the database lease (:mod:`app.scheduler.leader`) and runs the ones
it won, so any number of scheduler processes run each monitor once per interval. Job
defaults: ``coalesce=True`` (missed ticks run once), ``max_instances=1`` (a slow tick
never overlaps itself) and a ``misfire_grace_time``. A monitor that fails is recorded as a
failed run and the tick carries on. The app's lifespan starts it with the outbox sender;
``telltale scheduler`` runs the two alone.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy import Engine, func, select

from app import metrics
from app.db import make_engine
from app.models import Alert, DetectorRun
from app.models.base import utcnow
from app.monitors.detection import build_detector
from app.monitors.runner import DetectorFactory, MonitorRunner
from app.monitors.slots import DetectorSlots
from app.scheduler import leader
from app.scheduler.jobs import PeriodicJob
from app.settings import Settings

log = logging.getLogger("telltale.scheduler")


class SchedulerService:
    name = "scheduler"

    def __init__(
        self,
        settings: Settings,
        engine: Engine,
        sessionmaker: Any,
        *,
        jobs: Sequence[PeriodicJob] = (),
        tick_seconds: float = 5.0,
        misfire_grace_s: int = 30,
        clock: Any = utcnow,
        detector_factory: DetectorFactory = build_detector,
        read_engine: Engine | None = None,
    ) -> None:
        self.settings = settings
        self.engine = engine
        # Monitor windows from a replica when one is configured (app.monitors.runner).
        if read_engine is None and settings.read_database_url:
            read_engine = make_engine(settings.read_database_url, pool_size=settings.db_pool_size)
        self.read_engine = read_engine
        # Every run of this process goes through it, ``run now`` included: the detector
        # slots, the step cache and the cycles are the scheduler's (app.monitors.runner).
        self.runner = MonitorRunner(
            engine,
            slots=DetectorSlots(capacity=settings.max_concurrent_detectors),
            read_engine=read_engine,
            detector_factory=detector_factory,
            public_url=settings.public_url,
            clock=clock,
        )
        self.sessionmaker = sessionmaker
        self.jobs = list(jobs)
        self.tick_seconds = tick_seconds
        self.misfire_grace_s = misfire_grace_s
        self.clock = clock
        self.holder = f"{socket.gethostname()}:{os.getpid()}"
        self._scheduler: BackgroundScheduler | None = None

    def tick(self) -> list[DetectorRun]:
        """Run every due monitor this process wins; return the runs it made."""
        now = self.clock()
        runs: list[DetectorRun] = []
        # The monitors due together read their windows once (app/monitors/windows/cache.py).
        cycle = self.runner.cycle(now)
        for monitor_id, slot, interval in leader.due_monitors(self.engine, now=now):
            # Each claim and run is stamped with the time it really starts: a tick's start
            # time goes stale behind a slow monitor, and a stale claim would schedule the
            # next slot in the past, where another process runs it again at once.
            started = self.clock()
            try:
                won = leader.claim_monitor(
                    self.engine, monitor_id=monitor_id, slot=slot, interval_s=interval,
                    now=started,
                )  # fmt: skip
                if won is None:
                    continue
                run = self.runner.run(monitor_id, now=started, scheduled_for=won, cycle=cycle)
                if run is not None:
                    runs.append(run)
            except Exception:
                log.exception(
                    "monitor %s: run failed outside the detector; carrying on", monitor_id
                )
        self.runner.end_cycle()
        self._update_alert_gauge()
        return runs

    def run_periodic(self, job: PeriodicJob) -> None:
        try:
            if job.exclusive and not leader.claim_lease(
                self.engine,
                name=job.name,
                interval_s=job.interval_seconds,
                now=self.clock(),
                holder=self.holder,
            ):
                return
            job.func(self.engine, self.sessionmaker, self.settings)
            metrics.SCHEDULER_JOB_LAST_RUN.labels(job=job.name).set(time.time())
        except Exception:
            log.exception("periodic job %s failed; it runs again next interval", job.name)

    def _update_alert_gauge(self) -> None:
        try:
            with self.engine.connect() as conn:
                counts = dict(
                    conn.execute(select(Alert.state, func.count()).group_by(Alert.state)).all()
                )
            for state in ("firing", "acknowledged", "resolved"):
                metrics.ALERTS_BY_STATE.labels(state=state).set(int(counts.get(state, 0)))
        except Exception:
            log.exception("could not count alerts for the metrics")

    @property
    def running(self) -> bool:
        """Whether APScheduler's thread runs (the standalone scheduler's heartbeat asks)."""
        return self._scheduler is not None and self._scheduler.running

    def start(self) -> None:
        sched = BackgroundScheduler(
            timezone=UTC,
            job_defaults={
                "coalesce": True,
                "max_instances": 1,
                "misfire_grace_time": self.misfire_grace_s,
            },
        )
        first = datetime.now(UTC)
        sched.add_job(
            self.tick, "interval", seconds=self.tick_seconds, id="monitors", next_run_time=first
        )
        for job in self.jobs:
            sched.add_job(
                functools.partial(self.run_periodic, job),
                "interval",
                seconds=job.interval_seconds,
                id=f"periodic:{job.name}",
                next_run_time=first,
            )
        sched.start()
        self._scheduler = sched
        log.info(
            "scheduler started (tick %.1fs, %d periodic jobs)",
            self.tick_seconds,
            len(self.jobs),
        )

    def stop(self) -> None:
        if self._scheduler is not None:
            # wait=True lets a running tick finish its monitor and persist the run.
            self._scheduler.shutdown(wait=True)
            self._scheduler = None
