"""Run one monitor: load its windows, call the detector under a time limit, persist the run.

Which time ranges are compared is :mod:`app.monitors.baseline`'s decision (a lagged
rolling reference, frozen while an alert is open); the detector's level comes from the
monitor's false-alert budget (:mod:`app.monitors.calibration`).

A run is persisted whatever happens: ``ok`` (fired or not), ``insufficient_data`` (never
fires) or ``failed`` (the detector raised, timed out, or its configuration no longer
builds). A fired run writes a finding and raises or refreshes an alert; a clean run counts
towards auto-resolve. "Now" is a parameter so replays and tests can run at any time.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app import metrics
from app.alerts import lifecycle
from app.db import as_utc, write_session
from app.models import DetectorRun, Finding, Monitor
from app.models.base import utcnow
from app.monitors import (
    baseline,
    calibration,
    history,
    label_counts,
    vector_windows,
    version_baseline,
    windows,
)
from app.monitors import state as monitor_state
from app.monitors.baseline import BaselinePolicy, Windows
from app.monitors.cycle import WindowCache
from app.monitors.detection import Detector, build_detector
from app.monitors.slots import DetectorsBusy, DetectorSlots
from app.scores import roles as score_roles
from detectors import registry
from detectors.needs import STREAM_NEEDS as STREAM_SIGNALS
from detectors.needs import TRACE_EMBEDDING_NEEDS as TRACE_EMBEDDING_SIGNALS
from detectors.result import DetectorResult

log = logging.getLogger("telltale.monitors")

DetectorFactory = Callable[[str, Mapping[str, Any]], Detector]


class DetectorTimeout(Exception):
    pass


# One per process: detector threads are the process's, whichever caller started them.
# ``create_app`` sets its capacity from ``Settings.max_concurrent_detectors``.
DETECTOR_SLOTS = DetectorSlots(capacity=2)


def run_params(monitor: Monitor, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The detector parameters a run uses: the monitor's, with alpha from its ERT.

    With the sequential chart on, the per-run test gets half the false-alert rate (twice
    the ERT) and the chart the other half (:mod:`app.monitors.state`).
    """
    share = 0.5 if monitor.sequential else 1.0
    return calibration.calibrated_params(
        monitor.detector_params or {},
        defaults=defaults,
        ert_days=float(monitor.expected_days_between_false_alerts) / share,
        interval_seconds=float(monitor.interval_seconds),
    )


def call_with_time_limit(
    fn: Callable[[], DetectorResult], limit_s: float, *, slots: DetectorSlots | None = None
) -> DetectorResult:
    """Run ``fn`` in a daemon thread; raise DetectorTimeout after ``limit_s`` seconds.

    Python cannot kill a thread, so a timed-out detector keeps computing in the
    background until it returns. It keeps the slot the caller took from ``slots`` until
    then (see :mod:`app.monitors.slots`), which bounds how many such threads can exist.
    """
    box: dict[str, Any] = {}
    lock = threading.Lock()
    state = {"done": False, "overdue": False}

    def target() -> None:
        try:
            box["result"] = fn()
        except BaseException as exc:  # handed back to the caller below
            box["error"] = exc
        finally:
            with lock:
                state["done"] = True
                overdue = state["overdue"]
            if slots is not None:
                slots.release(was_overdue=overdue)

    thread = threading.Thread(target=target, name="detector", daemon=True)
    thread.start()
    thread.join(limit_s)
    with lock:
        if not state["done"]:
            state["overdue"] = True
            if slots is not None:
                slots.mark_overdue()
            raise DetectorTimeout(f"detector exceeded its time limit of {limit_s:g} s")
    if "error" in box:
        raise box["error"]
    return box["result"]  # type: ignore[no-any-return]


def finite_or_none(x: float | None) -> float | None:
    """NaN and infinities become NULL in the database and JSON."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def jsonable(value: Any) -> Any:
    """Evidence as plain JSON: numpy scalars to Python, NaN/inf to null, arrays to lists."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


def _load(
    session: Session,
    monitor: Monitor,
    detector: Detector,
    w: Windows,
    cache: WindowCache | None,
    write_engine: Engine | None = None,
) -> tuple[Any, Any, dict[str, Any]]:
    """The reference and current windows, and what the run's evidence says of them
    (step profiles computed on the way are written through ``write_engine``)."""
    sel = monitor.selection or {}
    needs = set(detector.needs)
    pid = monitor.project_id
    if needs & STREAM_SIGNALS:
        streams = vector_windows.embedding_streams(
            session, project_id=pid, stream=sel.get("stream"), agent=sel.get("agent")
        )

        def vectors(stream: str, start: datetime, end: datetime) -> np.ndarray:
            def load() -> np.ndarray:
                return vector_windows.load_embedding_window(
                    session, project_id=pid, stream=stream, start=start, end=end
                )

            return cache.vectors((pid, stream, start, end), load) if cache else load()

        ref_vecs = {s: vectors(s, w.reference_start, w.reference_end) for s in streams}
        cur_vecs = {s: vectors(s, w.current_start, w.current_end) for s in streams}
        return ref_vecs, cur_vecs, {}
    tsel = windows.TraceSelection(
        project_id=pid,
        agent=sel.get("agent"),
        source=sel.get("source"),
        max_traces=int(sel.get("max_traces", windows.DEFAULT_MAX_TRACES)),
        roles=score_roles.get_roles(session, project_id=pid),
    )
    with_emb = bool(needs & TRACE_EMBEDDING_SIGNALS)

    def traces(start: datetime, end: datetime, version: str | None) -> windows.TraceWindow:
        vsel = replace(tsel, agent_version=version)

        def load(embeddings: bool) -> windows.TraceWindow:
            return windows.load_trace_window(
                session, vsel, start=start, end=end, as_of=w.current_end,
                with_embeddings=embeddings, profile_writer=write_engine,
                step_cache=cache.steps if cache is not None else None,
            )  # fmt: skip

        if cache is None:
            return load(with_emb)
        return cache.trace_window(
            (vsel, start, end, w.current_end),
            with_embeddings=with_emb,
            load=lambda: load(False),
            attach=lambda tw: windows.with_trace_embeddings(session, tw, project_id=pid),
        )

    ref_version, cur_version = version_baseline.reference_versions_at(w)
    ref = traces(w.reference_start, w.reference_end, ref_version)
    cur = traces(w.current_start, w.current_end, cur_version)
    sample = {"reference": ref.evidence(), "current": cur.evidence()}
    cur_records: Any = cur.records
    if "labels" in registry.window_counts_of(monitor.failure_mode) and cur.sample.rate < 1.0:
        # A sampled window: FM-4's coverage and delays count every trace of it.
        cur_records = label_counts.with_label_counts(
            session, cur, replace(tsel, agent_version=cur_version),
            start=w.current_start, end=w.current_end, cache=cache,
        )  # fmt: skip
        sample["current"]["label_counts"] = {"traces_counted": cur_records.label_counts.traces}
    return ref.records, cur_records, sample


def _size(window: Any) -> int:
    if isinstance(window, Mapping):
        return int(sum(len(v) for v in window.values()))
    return len(window)


def _reader(session: Session, read_engine: Engine | None) -> AbstractContextManager[Session]:
    """A session on the read engine, or the run's own session when there is none."""
    return Session(read_engine) if read_engine is not None else nullcontext(session)


def run_monitor(
    engine: Engine,
    *,
    monitor_id: int,
    now: datetime | None = None,
    scheduled_for: datetime | None = None,
    detector_factory: DetectorFactory = build_detector,
    public_url: str = "",
    slots: DetectorSlots = DETECTOR_SLOTS,
    refuse_when_busy: bool = False,
    cache: WindowCache | None = None,
    read_engine: Engine | None = None,
) -> DetectorRun | None:
    """Run the monitor as of ``now``; return the persisted run (None: monitor is gone).

    With every detector slot taken the run waits for one up to the monitor's time limit,
    then is persisted as ``failed`` (the scheduler tries again next interval); with
    ``refuse_when_busy`` it does not wait: :class:`DetectorsBusy` is raised and nothing is
    persisted (``run now`` answers 429).

    ``cache``: the scheduler cycle's shared windows (:mod:`app.monitors.cycle`); the
    windows then end at the cycle's ``now``, so the monitors of one cycle share them.

    ``read_engine``: where the windows are read (``TELLTALE_READ_DATABASE_URL``, a
    streaming replica): the traces, vectors, versions and where the history begins. The
    monitor, its state (the frozen baseline, the open alert) and everything the run writes
    go through ``engine``, the primary, so a replica's lag can only delay which data a run
    sees, never which baseline or alert it acts on.
    """
    now = as_utc(now) if now is not None else utcnow()
    started = time.perf_counter()
    with Session(engine) as session, _reader(session, read_engine) as data:
        monitor = session.get(Monitor, monitor_id)
        if monitor is None:
            return None
        session.expunge(monitor)
        as_of = cache.now if cache is not None else now
        policy = BaselinePolicy.from_selection(monitor.selection or {})
        state = monitor_state.load(session, monitor.id)
        pid = monitor.project_id
        begun = (
            cache.history_start(pid, lambda: history.history_start(data, project_id=pid))
            if cache is not None
            else history.history_start(data, project_id=pid)
        )
        w = baseline.windows_for(policy, state.baseline, as_of, history_start=begun)
        no_reference: str | None = None
        if policy.reference_version:
            found = version_baseline.resolve(
                data, project_id=monitor.project_id, selection=monitor.selection or {},
                policy=policy, windows=w,
            )  # fmt: skip
            w, no_reference = found.windows, found.reason
        sample: dict[str, Any] = {}
        result: DetectorResult | None = None
        error: str | None = None
        n_ref = n_cur = 0
        wait_s = 0.0 if refuse_when_busy else float(monitor.time_limit_seconds)
        if no_reference is not None:  # no version to compare with: not an error
            result = DetectorResult.insufficient(monitor.failure_mode, no_reference)
        elif not slots.try_acquire(wait_s):
            if refuse_when_busy:
                raise DetectorsBusy(slots.busy_message())
            error = f"DetectorsBusy: {slots.busy_message()}"
        else:
            handed_to_thread = False
            try:
                params = run_params(monitor, registry.detector_parameters(monitor.failure_mode))
                detector = detector_factory(monitor.failure_mode, params)
                ref, cur, sample = _load(data, monitor, detector, w, cache, engine)
                n_ref, n_cur = _size(ref), _size(cur)
                epoch = as_of.timestamp()
                handed_to_thread = True
                result = call_with_time_limit(
                    lambda: detector.test(ref, cur, now=epoch),
                    float(monitor.time_limit_seconds),
                    slots=slots,
                )
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"[:2000]
                log.warning("monitor %s (%s) failed: %s", monitor.id, monitor.name, error)
            finally:
                if not handed_to_thread:
                    slots.release()
    duration_ms = (time.perf_counter() - started) * 1000.0
    run = _persist(
        engine,
        monitor=monitor,
        w=w,
        policy=policy,
        state=state,
        now=now,
        scheduled_for=scheduled_for,
        result=result,
        sample=sample,
        error=error,
        n_ref=n_ref,
        n_cur=n_cur,
        duration_ms=duration_ms,
        public_url=public_url,
    )
    metrics.observe_monitor_run(
        project_id=monitor.project_id,
        monitor=monitor.name,
        failure_mode=monitor.failure_mode,
        status=run.status,
        statistic=run.statistic,
        threshold=run.threshold,
        duration_s=duration_ms / 1000.0,
    )
    return run


def _persist(
    engine: Engine,
    *,
    monitor: Monitor,
    w: Windows,
    policy: BaselinePolicy,
    state: monitor_state.MonitorState,
    now: datetime,
    scheduled_for: datetime | None,
    result: DetectorResult | None,
    sample: Mapping[str, Any],
    error: str | None,
    n_ref: int,
    n_cur: int,
    duration_ms: float,
    public_url: str,
) -> DetectorRun:
    verdict: monitor_state.Verdict | None = None
    if result is None:
        status, fired, evidence = "failed", False, {}
    else:
        status = "ok" if result.status == "ok" else "insufficient_data"
        evidence = jsonable(dict(result.evidence))
        if sample:
            evidence["window_sample"] = jsonable(sample)
        if status == "ok":
            verdict = monitor_state.verdict(monitor, policy, state, w, result, now)
            evidence.update(jsonable(verdict.evidence))
        fired = verdict is not None and verdict.fired
    if fired and not (verdict is not None and verdict.pending):
        # What the alert will be held against: the baseline this run freezes.
        frozen = baseline.advance(
            policy, state.baseline, used=w, now=now, alert_open=True,
            degraded_from=state.pending_since,
        )  # fmt: skip
        evidence["baseline"] = baseline.describe(frozen, w)
    elif status == "ok":
        evidence["baseline"] = baseline.describe(state.baseline, w)
    with write_session(engine) as session:
        if fired and registry.checks_silence(monitor.failure_mode):
            evidence.update(monitor_state.silent_drift(session, project_id=monitor.project_id))
        run = DetectorRun(
            project_id=monitor.project_id,
            monitor_id=monitor.id,
            failure_mode=monitor.failure_mode,
            at=now,
            scheduled_for=scheduled_for,
            window_start=w.current_start,
            window_end=w.current_end,
            reference_start=w.reference_start,
            reference_end=w.reference_end,
            status=status,
            statistic=finite_or_none(result.statistic) if result else None,
            threshold=finite_or_none(result.threshold) if result else None,
            p_value=finite_or_none(result.p_value) if result else None,
            fired=fired,
            evidence=evidence,
            n_current=n_cur,
            n_reference=n_ref,
            duration_ms=duration_ms,
            error=error,
        )
        session.add(run)
        session.flush()
        live = session.get(Monitor, monitor.id)
        if live is None:  # deleted while running: keep nothing
            session.delete(run)
            return run
        live.last_run_at = now
        finding = None
        if fired:
            finding = Finding(
                project_id=run.project_id,
                monitor_id=run.monitor_id,
                run_id=run.id,
                failure_mode=run.failure_mode,
                severity=live.severity,
                at=now,
                statistic=run.statistic,
                threshold=run.threshold,
                p_value=run.p_value,
                evidence=evidence,
            )
            session.add(finding)
            session.flush()
        alert = lifecycle.record_run(
            session, monitor=live, run=run, finding=finding, now=now, public_url=public_url,
            still_degraded=verdict is not None and verdict.still_degraded,
            pending=verdict is not None and verdict.pending,
        )  # fmt: skip
        # Only a run that tested the data moves the baseline: a failed or insufficient run
        # says nothing about whether the period passed.
        if verdict is not None:
            alert_open = alert is not None and alert.state in lifecycle.OPEN_STATES
            new = baseline.advance(
                policy, state.baseline, used=w, now=now, alert_open=alert_open,
                degraded_from=state.pending_since,
            )  # fmt: skip
            after = monitor_state.MonitorState(new, verdict.chart, verdict.pending_since)
            monitor_state.save(session, live, after, now)
    return run
