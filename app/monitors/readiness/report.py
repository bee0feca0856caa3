"""Data readiness: per monitor, which of its detector's needs the current window carries.

A detector declares ``needs`` (:mod:`detectors.needs`) and runs with part of them: the
sub-tests that read a missing signal are left out. So a bare ``insufficient_data`` tells
a team nothing; this says, for the window the next run would read (the bounds the runner
computes: :func:`app.monitors.decision.baseline.windows_for` with the monitor's baseline state),
each need as present or missing with its count, and for each missing one the exact
remedy (:mod:`app.monitors.readiness.remedies`). Counts are SQL aggregates
(:mod:`app.monitors.readiness.counts`), never loaded records, and are the latest run's
when it counted that window recently (:mod:`app.monitors.readiness.recorded`): the
answer then names the run (``counted_by_run``) and its window.

A need is present only in the volume a verdict needs (:data:`MIN_COUNT`: the detectors'
default minimums) and only when it says something: a derived decision with one value on
every trace (``|stop`` on each trace captured without content) counts as missing.

``status``: ``ready`` (every need present), ``partial`` (some sub-test can run: one of
:data:`RUNS_WITH`'s sets is present), ``missing`` (none can) or ``no_data`` (nothing in
the window at all). ``ready`` and ``partial`` are promises that the next run gives a
verdict; where the monitor's latest run, on the window as it is now, gave none
(``insufficient_data``: not enough failures, say, which no count here foresees), the
status is ``insufficient`` and ``last_run`` carries that run's reason. Where that run gave
a verdict, ``missing`` is not claimed either: some sub-test ran (``partial``), and the
needs still say which are missing and how to send them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db import as_utc
from app.models import DetectorRun, Monitor
from app.models.base import utcnow
from app.models.evaluators import Evaluator
from app.monitors.decision import baseline
from app.monitors.decision import state as monitor_state
from app.monitors.readiness import counts as readiness_counts
from app.monitors.readiness import fit, recorded
from app.monitors.readiness.counts import WindowCounts
from app.monitors.readiness.remedies import REMEDIES, score_role_remedies
from app.monitors.windows import history
from app.monitors.windows import trace_window as windows
from app.monitors.windows import vectors as vector_windows
from app.rollups.buckets import floor_epoch, start_of
from app.rollups.series import read_series
from app.scores import roles as score_roles
from detectors import registry
from detectors.needs import NEEDS as SIGNALS
from detectors.needs import ROLLUP_NEEDS
from detectors.needs import STREAM_NEEDS as STREAM_SIGNALS
from detectors.rules.spec import RuleSpec

# The sets of needs with which some sub-test of the mode can run (from each detector's
# docstring): FM-3 compares decisions or output vectors of repeated inputs; FM-7 runs its
# trend tests on a proxy and a true objective, its diversity test on decisions alone.
RUNS_WITH: dict[str, tuple[tuple[str, ...], ...]] = {
    "FM-1": (("steps",),),
    "FM-2": (("steps", "tool_steps"),),
    "FM-3": (("input_hash", "decision"), ("input_hash", "output_embedding")),
    "FM-4": (("true_scores", "confidence"), ("true_scores", "steps")),
    "FM-5": (("eval_traces",),),
    "FM-6": (("stream_embeddings",),),
    "FM-7": (("proxy_scores", "true_scores"), ("decision",)),
    "OUTCOME": (("true_scores",), ("steps",)),
    "SILENCE": (("arrivals",),),
    "EARLY": (("steps",),),
    "JUDGE": (("true_scores",),),
    "ISSUES": (("failure_issues",),),
}


# The fewest traces carrying a need with which a detector gives a verdict: the detectors'
# default minimums (FM-1 and OUTCOME min_traces 30 multi-step traces, FM-4 min_labeled 30
# labeled reference traces, FM-5 eval traces to compare). A need below it is missing.
MIN_COUNT: dict[str, int] = {"steps": 30, "true_scores": 20, "eval_traces": 20}


@dataclass(frozen=True)
class Need:
    need: str
    present: bool
    count: int
    of: int | None  # the traces of the window (None: a count of vectors)
    detail: dict[str, Any]
    remedies: list[dict[str, str]]
    optional: bool = False  # missing, but the verdict comes without it (app.monitors.readiness.fit)


# need -> (count, detail) from the window's counts
_TRACE_NEEDS: dict[str, Callable[[WindowCounts], tuple[int, dict[str, Any]]]] = {
    "steps": lambda c: (c.with_spans, {}),
    "step_confidence": lambda c: (c.with_step_confidence, {}),
    "tool_steps": lambda c: (c.with_tool_steps, {}),
    "input_hash": lambda c: (c.with_input_hash, {"repeated_inputs": c.repeated_inputs}),
    "entry_point": lambda c: (c.with_entry_point, {}),
    "decision": lambda c: (c.with_decision, {"distinct": c.distinct_decisions}),
    "confidence": lambda c: (
        max(c.with_confidence, c.with_step_confidence),
        {"trace_attribute": c.with_confidence, "step_confidence": c.with_step_confidence},
    ),
    "true_scores": lambda c: (c.with_label, {}),
    "proxy_scores": lambda c: (c.with_proxy, {}),
    "eval_traces": lambda c: (c.eval_traces, {"production_traces": c.traces - c.eval_traces}),
    "counterfactual_runs": lambda c: (c.with_counterfactual, {}),
    "input_embedding": lambda c: (c.with_input_embedding, {}),
    "output_embedding": lambda c: (c.with_output_embedding, {}),
    "arrivals": lambda c: (c.traces, {}),
    "failure_issues": lambda c: (c.traces, {}),
}


def _present(need: str, count: int, detail: dict[str, Any]) -> bool:
    if need == "input_hash":  # FM-3 compares repeats: identities seen once are no group
        return bool(detail["repeated_inputs"])
    if need == "decision" and detail.get("distinct", 2) < 2:
        return False  # one value on every trace: a constant, not a decision
    return count >= MIN_COUNT.get(need, 1)


def trace_needs(
    needs: tuple[str, ...],
    counts: WindowCounts,
    roles: score_roles.ScoreRoles,
    *,
    failure_mode: str = "",
) -> list[Need]:
    """Each need with its count, present or not, and for a missing one its remedies as this
    mode and these traces read them (:mod:`app.monitors.readiness.fit`)."""
    shape = fit.shape_note(failure_mode, counts)
    found = {n: _TRACE_NEEDS[n](counts) for n in needs}
    present = {
        n for n, (c, d) in found.items() if _present(n, c, d) and not (shape and n == "steps")
    }
    optional = fit.can_run(RUNS_WITH.get(failure_mode, ()), present)
    native = counts.via_otlp == 0 and counts.traces > 0
    out = []
    for name in needs:
        count, detail = found[name]
        if name in present:
            out.append(Need(name, True, count, counts.traces, detail, []))
            continue
        remedies: list[dict[str, str]] = []
        if shape and name == "steps":
            out.append(Need(name, False, count, counts.traces, {**detail, "shape": shape},
                            [{"how": "note", "text": shape}]))  # fmt: skip
            continue
        if name in ("true_scores", "proxy_scores"):
            remedies += score_role_remedies(name, counts.score_names, roles=roles)
        remedies += REMEDIES[name]
        remedies = fit.fitted(remedies, need=name, failure_mode=failure_mode,
                              optional=optional, native=native)  # fmt: skip
        if name == "input_hash" and count:
            remedies.insert(0, {"how": "note", "text": f"{count} traces carry an input "
                                "identity but none repeats in this window"})  # fmt: skip
        elif name == "decision" and count:
            remedies.insert(0, {"how": "note", "text": f"all {count} traces carry the same "
                                "decision: a constant tells no change (a derived decision "
                                "of traces captured without content reads the same on "
                                "each)"})  # fmt: skip
        elif count and count < MIN_COUNT.get(name, 1):
            remedies.insert(0, {"how": "note", "text": f"{count} traces carry it; a "
                                f"verdict needs {MIN_COUNT[name]} in the window"})  # fmt: skip
        out.append(Need(name, False, count, counts.traces, detail, remedies, optional))
    return out


def status_of(failure_mode: str, needs: list[Need], empty: bool) -> str:
    if empty:
        return "no_data"
    present = {n.need for n in needs if n.present}
    if all(n.present for n in needs):
        return "ready"
    if any(set(group) <= present for group in RUNS_WITH.get(failure_mode, ())):
        return "partial"
    return "missing"


class CountsCache(Protocol):
    """Where a page keeps window counts between monitors (a dict, or one that expires)."""

    def get(self, key: Any) -> Any: ...

    def __setitem__(self, key: Any, value: Any) -> None: ...


def _paused_evaluators(session: Session, project_id: int, needs: list[Need], now: datetime) -> None:
    """Name each paused evaluator (its circuit breaker open) first among the remedies of
    the score needs it feeds: its scores stopped, and the reason says why."""
    wanted = {n.need for n in needs} & {"true_scores", "proxy_scores"}
    if not wanted:
        return
    paused = session.execute(
        select(Evaluator.name, Evaluator.objective, Evaluator.pause_reason).where(
            Evaluator.project_id == project_id, Evaluator.paused_until > now
        )
    ).all()
    for need in needs:
        for name, objective, reason in paused:
            if need.need == "proxy_scores" or objective is not None:
                need.remedies.insert(0, {"how": "evaluator", "text": f"evaluator {name} is "
                                         f"paused: {reason}"})  # fmt: skip


def monitor_readiness(
    session: Session,
    *,
    monitor: Monitor,
    now: datetime | None = None,
    counts_cache: CountsCache | None = None,
) -> dict[str, Any]:
    """The monitor's readiness for the window a run at ``now`` would read.

    ``counts_cache`` (one per page) shares a window's counts between monitors that read
    the same window with the same selection, as the seven defaults do.
    """
    now = as_utc(now) if now is not None else utcnow()
    sel = monitor.selection or {}
    begun = history.history_start(session, project_id=monitor.project_id)
    policy = baseline.policy_in_force(
        baseline.BaselinePolicy.from_selection(sel), begun, now,
        judged=lambda: history.judges_an_objective(session, project_id=monitor.project_id),
    )  # fmt: skip
    w = baseline.windows_for(
        policy, monitor_state.load(session, monitor.id).baseline, now, history_start=begun
    )
    needs_names = registry.needs_of(monitor.failure_mode)
    latest = session.scalars(
        select(DetectorRun)
        .where(DetectorRun.monitor_id == monitor.id)
        .order_by(DetectorRun.at.desc())
        .limit(1)
    ).first()
    if set(needs_names) & ROLLUP_NEEDS:
        return _rule_readiness(session, monitor, now=now, latest=latest)
    pid = monitor.project_id
    answer: dict[str, Any] = {
        "monitor_id": monitor.id,
        "failure_mode": monitor.failure_mode,
        "window": {"start": w.current_start.isoformat(), "end": w.current_end.isoformat()},
    }
    if set(needs_names) & STREAM_SIGNALS:
        streams = vector_windows.embedding_streams(
            session, project_id=pid, stream=sel.get("stream"), agent=sel.get("agent")
        )
        vectors = readiness_counts.stream_counts(
            session, project_id=pid, streams=streams, start=w.current_start, end=w.current_end
        )
        total = sum(vectors.values())
        needs = [
            Need("stream_embeddings", total > 0, total, None, {"streams": vectors},
                 [] if total else list(REMEDIES["stream_embeddings"]))
        ]  # fmt: skip
        answer["traces"] = None
        empty = not total
    else:
        roles = score_roles.get_roles(session, project_id=pid)
        tsel = windows.TraceSelection(
            project_id=pid, agent=sel.get("agent"), source=sel.get("source"), roles=roles
        )
        key = (tsel, w.current_start, w.current_end)
        counts = (
            (counts_cache or {}).get(key)
            or recorded.from_run(
                latest, tsel, now=now, window=w.current_end - w.current_start,
                interval_seconds=monitor.interval_seconds,
            )
            or readiness_counts.window_counts(
                session, tsel, start=w.current_start, end=w.current_end, as_of=w.current_end
            )
        )  # fmt: skip
        if counts_cache is not None:
            counts_cache[key] = counts
        if counts.recorded_by is not None:  # the run's window, not the one now would read
            kept = counts.recorded_by
            answer["window"] = {"start": kept["start"], "end": kept["end"]}
            answer["counted_by_run"] = {"id": kept["run_id"], "at": kept["at"]}
        needs = trace_needs(needs_names, counts, roles, failure_mode=monitor.failure_mode)
        _paused_evaluators(session, pid, needs, now)
        answer["traces"] = counts.traces
        answer["counted_traces"] = counts.counted_traces
        answer["scores"] = [
            {"name": n, "sent_as": k, "source": s, "read_as": roles.kind_of(n, k),
             "scores": c, "traces": t}
            for n, k, s, c, t in counts.score_names
        ]  # fmt: skip
        empty = not counts.traces
    answer["status"] = status_of(monitor.failure_mode, needs, empty)
    last = _last_run(latest, monitor, w.current_end)
    if last is not None:
        answer["last_run"] = last
        if answer["status"] in ("ready", "partial") and last["status"] == "insufficient_data":
            answer["status"] = "insufficient"
        elif answer["status"] == "missing" and last["status"] == "ok":
            # The run gave a verdict, so some sub-test had what it needs where these counts
            # do not look (FM-4's labeled reference, say, when the current window's labels
            # stopped: the very failure it watches for).
            answer["status"] = "partial"
    answer["needs"] = [
        {
            "need": n.need,
            "description": SIGNALS[n.need],
            "present": n.present,
            "count": n.count,
            "of": n.of,
            "detail": n.detail,
            "remedies": n.remedies,
            "optional": n.optional,
        }
        for n in needs
    ]
    return answer


def _rule_readiness(
    session: Session, monitor: Monitor, *, now: datetime, latest: DetectorRun | None
) -> dict[str, Any]:
    """An alert rule reads its metric from the rollups: ready when its last window holds
    traffic matching its filter (``traces``: the items its metric counts there)."""
    spec = RuleSpec.model_validate((monitor.detector_params or {}).get("rule"))
    end = floor_epoch(now.timestamp() - spec.evaluation_delay_seconds)
    start = end - spec.window_seconds
    series = read_series(session, project_id=monitor.project_id, spec=spec, start=start, end=end)
    count = len(series)
    answer: dict[str, Any] = {
        "monitor_id": monitor.id, "failure_mode": monitor.failure_mode,
        "window": {"start": start_of(start).isoformat(), "end": start_of(end).isoformat()},
        "status": "ready" if count else "no_data", "traces": count, "needs": [],
    }  # fmt: skip
    last = _last_run(latest, monitor, now)
    if last is not None:
        answer["last_run"] = last
    return answer


def _last_run(run: DetectorRun | None, monitor: Monitor, now: datetime) -> dict[str, Any] | None:
    """The monitor's latest run if it read the window as it is now (within two intervals):
    its status and, without a verdict, its reason."""
    if run is None or now - as_utc(run.at) > timedelta(seconds=2 * monitor.interval_seconds):
        return None
    reason = (run.evidence or {}).get("reason") if run.status == "insufficient_data" else None
    return {"at": as_utc(run.at).isoformat(), "status": run.status, "reason": reason}
