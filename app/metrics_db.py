"""Refresh the database-backed gauges just before ``/metrics`` is rendered.

Alerts, the outbox, labeling queues, embed jobs and each monitor's last run live in the
database, and the process that changed them (scheduler, worker) is often not the one
Prometheus scrapes. Reading them at scrape time makes every API replica report the same,
true values; the queries are grouped counts over indexed columns.
"""

from __future__ import annotations

import math

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app import metrics
from app.issues.states import STATES, issue_state
from app.models import Alert, DetectorRun, FailureIssue, Monitor, Notification, QueueItem
from app.models.base import Base, utcnow
from app.models.evaluators import Evaluation, Evaluator, EvaluatorUsage
from app.models.labeling import LabelQueue


def refresh(session: Session) -> None:
    _alerts(session)
    _outbox(session)
    _monitors(session)
    _queues(session)
    _embed_jobs(session)
    _evaluators(session)
    _failure_issues(session)


def _alerts(session: Session) -> None:
    counts = dict(session.execute(select(Alert.state, func.count()).group_by(Alert.state)).all())
    for state in ("firing", "acknowledged", "resolved"):
        metrics.ALERTS_BY_STATE.labels(state=state).set(counts.get(state, 0))


def _outbox(session: Session) -> None:
    pending = session.scalar(
        select(func.count()).select_from(Notification).where(Notification.status == "pending")
    )
    metrics.OUTBOX_BACKLOG.set(pending or 0)


def _monitors(session: Session) -> None:
    last = (
        select(DetectorRun.monitor_id, func.max(DetectorRun.id).label("run_id"))
        .group_by(DetectorRun.monitor_id)
        .subquery()
    )
    rows = session.execute(
        select(Monitor.project_id, Monitor.name, Monitor.failure_mode, DetectorRun)
        .join(last, last.c.monitor_id == Monitor.id)
        .join(DetectorRun, DetectorRun.id == last.c.run_id)
    ).all()
    for project_id, name, mode, run in rows:
        labels = {"project_id": str(project_id), "monitor": name, "failure_mode": mode}
        metrics.MONITOR_LAST_RUN.labels(**labels).set(run.at.timestamp())
        metrics.MONITOR_LAST_DURATION.labels(**labels).set(run.duration_ms / 1000.0)
        if run.statistic is not None and math.isfinite(run.statistic):
            metrics.MONITOR_LAST_STATISTIC.labels(**labels).set(run.statistic)
        if run.threshold is not None and math.isfinite(run.threshold):
            metrics.MONITOR_LAST_THRESHOLD.labels(**labels).set(run.threshold)


def _queues(session: Session) -> None:
    rows = session.execute(
        select(LabelQueue.project_id, LabelQueue.name, QueueItem.status, func.count())
        .join(QueueItem, QueueItem.queue_id == LabelQueue.id)
        .group_by(LabelQueue.project_id, LabelQueue.name, QueueItem.status)
    ).all()
    for project_id, queue, state, n in rows:
        metrics.LABEL_QUEUE_DEPTH.labels(project_id=str(project_id), queue=queue, state=state).set(
            n
        )


def _embed_jobs(session: Session) -> None:
    table = Base.metadata.tables.get("media_jobs")
    if table is None or "status" not in table.c:
        return
    counts: dict[str, int] = dict(
        session.execute(select(table.c.status, func.count()).group_by(table.c.status)).all()
    )
    for status in ("pending", "running", "done", "failed", "dead"):
        metrics.EMBED_JOB_BACKLOG.labels(status=status).set(counts.get(status, 0))


def _evaluators(session: Session) -> None:
    now = utcnow()
    evaluators = session.execute(
        select(Evaluator.id, Evaluator.project_id, Evaluator.name, Evaluator.paused_until)
    ).all()
    usage = {
        eid: (calls, tokens)
        for eid, calls, tokens in session.execute(
            select(EvaluatorUsage.evaluator_id, EvaluatorUsage.calls, EvaluatorUsage.tokens)
            .where(EvaluatorUsage.day == now.date())
        )
    }  # fmt: skip
    backlog = {
        (eid, status): n
        for eid, status, n in session.execute(
            select(Evaluation.evaluator_id, Evaluation.status, func.count())
            .where(Evaluation.status.in_(("pending", "running")))
            .group_by(Evaluation.evaluator_id, Evaluation.status)
        )
    }  # fmt: skip
    for eid, project_id, name, paused_until in evaluators:
        labels = {"project_id": str(project_id), "evaluator": name}
        metrics.EVALUATOR_PAUSED.labels(**labels).set(
            1 if paused_until is not None and paused_until > now else 0
        )
        calls, tokens = usage.get(eid, (0, 0))
        metrics.EVALUATOR_CALLS_TODAY.labels(**labels).set(calls)
        metrics.EVALUATOR_TOKENS_TODAY.labels(**labels).set(tokens)
        for status in ("pending", "running"):
            metrics.EVALUATOR_BACKLOG.labels(**labels, status=status).set(
                backlog.get((eid, status), 0)
            )


def _failure_issues(session: Session) -> None:
    """Issues per project and state. The state is read from times, not stored, so each
    issue's columns are read (a project has its distinct failures by the hundred)."""
    now = utcnow()
    counts: dict[int, dict[str, int]] = {}
    rows = session.execute(select(
        FailureIssue.project_id, FailureIssue.status, FailureIssue.first_seen,
        FailureIssue.last_seen, FailureIssue.regressed_at, FailureIssue.status_at,
    )).all()  # fmt: skip
    for pid, status, first, last, regressed, status_at in rows:
        state = issue_state(status=status, first_seen=first, last_seen=last,
                            regressed_at=regressed, status_at=status_at, now=now)  # fmt: skip
        mine = counts.setdefault(pid, dict.fromkeys(STATES, 0))
        mine[state] += 1
    for pid, by_state in counts.items():
        for state, n in by_state.items():
            metrics.FAILURE_ISSUES.labels(project_id=str(pid), state=state).set(n)
