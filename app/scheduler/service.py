"""The scheduler service: APScheduler runs due monitors and the periodic jobs it is given.

One ``monitors`` job ticks every few seconds. A tick first records the runs whose process
stopped during them (:mod:`app.scheduler.interrupted`), then runs rounds until nothing
due is left: each round finds the monitors whose ``next_run_at`` has come, takes a share
of them per project (:mod:`app.scheduler.fair_share`), claims each with the database
lease (:mod:`app.scheduler.leader`), runs the ones it won and releases their claims, so
any number of scheduler processes run each monitor once per interval and no project's
backlog runs before another project's due monitor. Job
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
import threading
import time
from collections import Counter
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
from app.monitors.schemas import MIN_INTERVAL_SECONDS
from app.monitors.slots import DetectorSlots
from app.monitors.windows.cache import WindowCache
from app.scheduler import fair_share, interrupted, leader
from app.scheduler.jobs import PeriodicJob
from app.scheduler.leader import DueMonitor
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
        min_interval_s: float = MIN_INTERVAL_SECONDS,
        project_share: int = fair_share.PROJECT_SHARE,
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
        # Monitors set below the floor before it existed run at it (app.scheduler.leader).
        self.min_interval_s = min_interval_s
        self.project_share = project_share
        # Set by stop(): a tick starts no new round, so shutdown waits for one round at most.
        self._stopping = threading.Event()
        self.holder = f"{socket.gethostname()}:{os.getpid()}"
        self._scheduler: BackgroundScheduler | None = None

    def tick(self) -> list[DetectorRun]:
        """Run every due monitor this process wins, a share per project per round; return
        the runs it recorded (interrupted ones included)."""
        runs = self._record_interrupted()
        taken: Counter[int] = Counter()
        while not self._stopping.is_set():
            now = self.clock()
            due = leader.due_monitors(self.engine, now=now, min_interval_s=self.min_interval_s)
            round_ = fair_share.take_round(due, taken=taken, share=self.project_share)
            if not round_:
                break
            # The monitors of a round read their windows once (app/monitors/windows/cache.py).
            cycle = self.runner.cycle(now)
            won_any = False
            for monitor in round_:
                run, won = self._claim_and_run(monitor, cycle)
                taken[monitor.project_id] += won
                won_any = won_any or won
                if run is not None:
                    runs.append(run)
            # Done when the round held all that was due, or won nothing (others run them).
            if len(round_) == len(due) or not won_any:
                break
        self.runner.end_cycle()
        self._update_alert_gauge()
        return runs

    def _record_interrupted(self) -> list[DetectorRun]:
        try:
            return interrupted.record_interrupted(self.engine, now=self.clock())
        except Exception:  # the claims stay; the next tick tries again
            log.exception("could not record the interrupted runs; carrying on")
            return []

    def _claim_and_run(
        self, monitor: DueMonitor, cycle: WindowCache
    ) -> tuple[DetectorRun | None, bool]:
        """Claim the monitor's slot and run it; return its run and whether the claim was won."""
        # Each claim and run is stamped with the time it really starts: a round's start
        # time goes stale behind a slow monitor, and a stale claim would schedule the next
        # slot in the past, where another process runs it again at once.
        started = self.clock()
        try:
            won = leader.claim_monitor(
                self.engine, monitor_id=monitor.monitor_id, slot=monitor.slot,
                interval_s=monitor.interval_s, lease_s=monitor.lease_s, now=started,
            )  # fmt: skip
        except Exception:
            log.exception("monitor %s: could not claim its run; carrying on", monitor.monitor_id)
            return None, False
        if won is None:
            return None, False
        run = None
        try:
            run = self.runner.run(monitor.monitor_id, now=started, scheduled_for=won, cycle=cycle)
        except Exception:
            log.exception(
                "monitor %s: run failed outside the detector; carrying on", monitor.monitor_id
            )
        try:
            leader.release_claim(self.engine, monitor_id=monitor.monitor_id, slot=won)
        except Exception:  # the claim expires and the run is recorded as interrupted
            log.exception("monitor %s: could not release its claim", monitor.monitor_id)
        return run, True

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
        self._stopping.clear()
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
        self._stopping.set()
        if self._scheduler is not None:
            # wait=True lets a running tick finish its monitor and persist the run.
            self._scheduler.shutdown(wait=True)
            self._scheduler = None
