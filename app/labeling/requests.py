"""FM-4 "needs labels" requests turned into queue work: unlabeled traces of the named cohorts."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, exists, select
from sqlalchemy.orm import Session

from app.labeling import boosts
from app.models import Score, Trace
from app.models.labeling import LabelQueue, QueueItem

# A request older than this is stale: the next FM-4 run will say again if it still holds.
REQUEST_MAX_AGE = timedelta(days=1)
LABEL_SOURCES = ("delayed", "human")


def takes_traces(queue: LabelQueue) -> bool:
    """Queues that name agents, or no streams at all, label traces."""
    sel = queue.selection
    return bool(sel.get("agents")) or not sel.get("streams")


def requested_traces(
    session: Session, *, queue: LabelQueue, now: datetime, limit: int
) -> list[dict[str, Any]]:
    """Queue rows for unlabeled, not yet queued traces of cohorts FM-4 asked labels for."""
    if limit <= 0 or not takes_traces(queue):
        return []
    sel = queue.selection
    agents, sources = set(sel.get("agents") or []), set(sel.get("sources") or [])
    if sources and "production" not in sources:
        return []  # FM-4 measures production coverage only
    pid = queue.project_id
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for req in boosts.label_requests(session, project_id=pid, since=now - REQUEST_MAX_AGE):
        for cohort in req.cohorts:
            agent = cohort.get("agent")
            if agents and agent not in agents:
                continue
            rows = session.execute(_unlabeled(queue, req, cohort)).all()
            for tid, agent_name, attrs, started in rows:
                task = str((attrs or {}).get("task_type", ""))
                if "task_type" in cohort and cohort["task_type"] != task:
                    continue
                key = f"trace:{tid}"
                if key in seen:
                    continue
                seen.add(key)
                out.append(_row(key, tid, started, req, agent_name, cohort))
                if len(out) >= limit:
                    return out
    return out


def _unlabeled(queue: LabelQueue, req: boosts.LabelRequest, cohort: dict[str, Any]) -> Any:
    pid = queue.project_id
    labeled = exists().where(
        Score.project_id == pid,
        Score.trace_id == Trace.trace_id,
        Score.kind == "true",
        Score.source.in_(LABEL_SOURCES),
    )
    queued = exists().where(QueueItem.queue_id == queue.id, QueueItem.trace_id == Trace.trace_id)
    q = select(Trace.trace_id, Trace.agent, Trace.attributes, Trace.started_at).where(
        Trace.project_id == pid,
        Trace.source == "production",
        and_(Trace.started_at >= req.start, Trace.started_at <= req.end),
        ~labeled,
        ~queued,
    )
    if cohort.get("agent") is not None:
        q = q.where(Trace.agent == cohort["agent"])
    if cohort.get("agent_version") is not None:
        q = q.where(Trace.agent_version == cohort["agent_version"])
    return q.order_by(Trace.started_at.desc()).limit(5000)


def _row(
    key: str,
    trace_id: str,
    started: datetime | None,
    req: boosts.LabelRequest,
    agent: str,
    cohort: dict[str, Any],
) -> dict[str, Any]:
    cov = cohort.get("coverage", req.coverage)
    cov_text = f"label coverage {cov:.2f}" if isinstance(cov, int | float) else "low label coverage"
    scope = ", ".join(
        f"{k}={cohort[k]}" for k in ("agent", "agent_version", "task_type") if k in cohort
    )
    return {
        "sample_key": key,
        "embedding_id": None,
        "stream": None,
        "trace_id": trace_id,
        "sample_id": None,
        "sample_time": started,
        "novelty": None,
        "boost": boosts.BOOST_WEIGHT,
        # No embedding distance to rank by: rank as a boosted sample at unit novelty.
        "priority": boosts.BOOST_WEIGHT,
        "reason": (
            f"requested by FM-4 ({req.monitor}): {cov_text} in cohort "
            f"{scope or f'agent={agent}'} (window {req.start:%Y-%m-%d %H:%M}–{req.end:%H:%M} UTC)"
        ),
    }
