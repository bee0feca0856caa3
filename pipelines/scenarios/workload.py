"""The seeded workload generator: native ingest events for a realistic agent fleet.

``generate_workload`` simulates traces arriving as a Poisson stream (production traffic
from several entry points, eval-harness runs, counterfactual shadow replays), each with
its steps, scores, delayed labels and input/output embeddings, plus a VLM image-embedding
stream, and returns them as the native ingest events of the ingest API::

    {"id": "<client event id>", "type": "trace"|"span"|"score"|"embedding", "body": {...}}

Event ids are derived from the seed, the start time and the injections, so re-sending a
workload is idempotent and two different scenarios never collide. A production trace with a
counterfactual replay carries ``counterfactual_of`` = the replay's trace id (the baseline
run it is compared with, as the FM-7 detector reads it); the replay is ``source=shadow``.
Delayed labels are score events whose ``created_at`` lies hours after the trace; a monitor
replaying the stream should hide them until then (:func:`pipelines.scenarios.as_of`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from pipelines.scenarios.convert import epoch, iso
from pipelines.scenarios.injections import Effects, Injection, effects_at
from pipelines.scenarios.profiles import DEFAULT_AGENTS, AgentWorld, build_worlds, stable_int
from pipelines.scenarios.simulate import (
    MAX_STEPS,
    N_STEP_U,
    N_STEP_Z,
    N_TRACE_U,
    N_TRACE_Z,
    TraceDraft,
    pick_world,
    simulate_trace,
)
from pipelines.scenarios.vlm import image_events

TEXT_MODEL = "telltale-sim-text-v1"
INPUT_NOISE, OUTPUT_NOISE = 0.03, 0.15


def scenario_prefix(seed: int, start: datetime, injections: Sequence[Injection]) -> str:
    key = "|".join([str(seed), start.isoformat(), *sorted(i.key() for i in injections)])
    return hashlib.blake2b(key.encode(), digest_size=4).hexdigest()


class _Blocks:
    """Per-trace random blocks, drawn once for all traces (common random numbers).

    Rows are converted to Python lists only when a trace is simulated (``row``), so a
    partial workload (``emit_between``) pays only for the traces it emits.
    """

    def __init__(self, rng: np.random.Generator, n: int, dim: int) -> None:
        self._ut = rng.random((n, N_TRACE_U))
        self._zt = rng.standard_normal((n, N_TRACE_Z))
        self._us = rng.random((n, MAX_STEPS, N_STEP_U))
        self._zs = rng.standard_normal((n, MAX_STEPS, N_STEP_Z))
        shape = (n, dim)
        self.z_in = (rng.standard_normal(shape) / np.sqrt(max(dim, 1))).astype(np.float32)
        self.z_out = (rng.standard_normal(shape) / np.sqrt(max(dim, 1))).astype(np.float32)

    def row(self, i: int) -> tuple[list[float], list[float], list[list[float]], list[list[float]]]:
        return (
            self._ut[i].tolist(),
            self._zt[i].tolist(),
            self._us[i].tolist(),
            self._zs[i].tolist(),
        )


def generate_workload(
    seed: int,
    start: datetime,
    duration: timedelta,
    traces_per_hour: float = 120.0,
    agents: Sequence[str] = DEFAULT_AGENTS,
    injections: Sequence[Injection] = (),
    include_embeddings: bool = True,
    embedding_dim: int = 64,
    *,
    eval_per_agent_hour: int = 16,
    counterfactual_fraction: float = 0.1,
    images_per_hour: float = 120.0,
    emit_between: tuple[datetime, datetime] | None = None,
) -> list[dict[str, Any]]:
    """Generate a seeded workload as native ingest events.

    Parameters
    ----------
    seed : int
        Everything random derives from it; the same arguments give the same events.
    start, duration : datetime, timedelta
        The simulated period (``start`` timezone-aware).
    traces_per_hour : float
        Mean arrival rate of production traces (a Poisson stream).
    agents : sequence of str
        Agent names; the built-in ones have tailored tools and decisions, others a generic
        profile. The first agent is the one FM-5 upgrades.
    injections : sequence of Injection
        Failure modes switched on from a time on; empty for the clean baseline.
    include_embeddings, embedding_dim : bool, int
        Emit ``<agent>.input`` / ``<agent>.output`` and ``vlm.image`` embeddings of this dim.
    eval_per_agent_hour : int
        Eval-harness runs per agent and hour (``source=eval``, entry point ``batch``): a
        burst at the top of every hour over the agent's fixed eval set.
    counterfactual_fraction, images_per_hour : float
        Share of production traces replayed on the baseline version as a shadow
        counterfactual; rate of the VLM image stream.
    emit_between : (datetime, datetime), optional
        Emit only traces (and images) that start in ``[lo, hi)``. Traces are simulated
        independently, so these are exactly the events of the full workload in that range
        (benches use it to regenerate only the injected part of a scenario).
    """
    if start.tzinfo is None:
        raise ValueError("start must be timezone-aware (UTC)")
    if duration <= timedelta(0):
        raise ValueError("duration must be positive")
    if traces_per_hour <= 0:
        raise ValueError("traces_per_hour must be positive")
    if not agents:
        raise ValueError("agents must name at least one agent")
    if embedding_dim < 2:
        raise ValueError("embedding_dim must be >= 2")
    if eval_per_agent_hour < 0:
        raise ValueError("eval_per_agent_hour must be >= 0")
    if not 0.0 <= counterfactual_fraction <= 1.0:
        raise ValueError("counterfactual_fraction must be in [0, 1]")

    t_start, hours = start.timestamp(), duration.total_seconds() / 3600.0
    prefix = scenario_prefix(seed, start, injections)
    worlds = build_worlds(seed, agents, embedding_dim)
    traffic = np.array([w.profile.traffic for w in worlds])
    agent_cdf = (np.cumsum(traffic) / traffic.sum()).tolist()

    rng = np.random.default_rng(stable_int("arrivals", seed))
    n = int(rng.poisson(traces_per_hour * hours))
    starts = np.sort(rng.uniform(0.0, duration.total_seconds(), n)) + t_start
    main = _Blocks(np.random.default_rng(stable_int("traces", seed)), n, embedding_dim)
    twin = _Blocks(np.random.default_rng(stable_int("replays", seed)), n, embedding_dim)
    # Eval harness: a burst of runs per agent at the top of every hour, 20 s apart.
    slots = [
        (t_start + 3600.0 * h + 20.0 * k, a)
        for h in range(int(np.ceil(hours)))
        for a in range(len(worlds))
        for k in range(eval_per_agent_hour)
        if 3600.0 * h + 20.0 * k < duration.total_seconds()
    ]
    ev = _Blocks(np.random.default_rng(stable_int("eval", seed)), len(slots), embedding_dim)
    arrivals = [(float(t), "production", i) for i, t in enumerate(starts)]
    arrivals += [(t, "eval", i) for i, (t, _) in enumerate(slots)]
    arrivals.sort()

    lo, hi = (
        (-np.inf, np.inf)
        if emit_between is None
        else (emit_between[0].timestamp(), emit_between[1].timestamp())
    )
    events: list[dict[str, Any]] = []
    for t0, source, i in arrivals:
        if not lo <= t0 < hi:
            continue
        eff = effects_at(injections, t0)
        blocks = main if source == "production" else ev
        if source == "production":
            world = pick_world(worlds, agent_cdf, float(main._ut[i, 1]))
            tid = f"{prefix}-t{i:05d}"
        else:
            world = worlds[slots[i][1]]
            tid = f"{prefix}-e{i:05d}"
        draft = simulate_trace(
            i, t0, world, eff, *blocks.row(i),
            source=source, counterfactual_fraction=counterfactual_fraction,
            upgradable=world is worlds[0],
        )  # fmt: skip
        # A paired run names the run it is compared with: the production trace points at
        # its shadow replay on the baseline version (the FM-7 detector's convention).
        _emit(events, draft, tid, f"{tid}-cf" if draft.twin else None, eff, blocks, i,
              include_embeddings)  # fmt: skip
        if draft.twin:  # the baseline version replays the same input a minute later
            tw = twin.row(i)
            replay = simulate_trace(
                i, t0 + 60.0 + 60.0 * tw[0][21], world, Effects(), *tw, replay_of=draft,
                source="shadow", counterfactual_fraction=0.0,
            )  # fmt: skip
            _emit(events, replay, f"{tid}-cf", None, Effects(), twin, i, include_embeddings)
    if include_embeddings and images_per_hour > 0:
        images = image_events(
            seed, prefix, t_start, duration.total_seconds(), images_per_hour, embedding_dim,
            injections,
        )  # fmt: skip
        events += [e for e in images if lo <= epoch(e["body"]["created_at"]) < hi]
    return events


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def _emit(
    events: list[dict[str, Any]],
    d: TraceDraft,
    tid: str,
    counterfactual_of: str | None,
    eff: Effects,
    blocks: _Blocks,
    i: int,
    include_embeddings: bool,
) -> None:
    w: AgentWorld = d.world
    events.append(
        {
            "id": f"{tid}.trace",
            "type": "trace",
            "body": {
                "trace_id": tid,
                "agent": d.agent,
                "agent_version": d.version,
                "started_at": iso(d.started_at),
                "ended_at": iso(d.ended_at),
                "status": d.status,
                "input_hash": w.input_hash(d.intent),
                "entry_point": d.entry_point,
                "source": d.source,
                "counterfactual_of": counterfactual_of,
                "attributes": {
                    "decision": d.decision,
                    "task_type": d.task_type,
                    "confidence": d.confidence,
                    "n_steps": len(d.steps),
                },
            },
        }
    )
    for j, s in enumerate(d.steps):
        events.append(
            {
                "id": f"{tid}.span{j}",
                "type": "span",
                "body": {
                    "trace_id": tid,
                    "span_id": f"{tid}-s{j}",
                    "parent_span_id": None,
                    "kind": s.kind,
                    "name": s.name,
                    "tool_name": s.tool_name,
                    "status": s.status,
                    "error_type": s.error_type,
                    "started_at": iso(s.started_at),
                    "ended_at": iso(s.ended_at),
                    "step_index": j,
                    "confidence": None if s.confidence is None else round(s.confidence, 4),
                    "attributes": dict(s.attributes),
                },
            }
        )
    for name, value, kind, source, created in d.scores:
        events.append(
            {
                "id": f"{tid}.score.{name}.{source}",
                "type": "score",
                "body": {
                    "trace_id": tid,
                    "name": name,
                    "value": value,
                    "kind": kind,
                    "source": source,
                    "created_at": iso(created),
                },
            }
        )
    if not include_embeddings:
        return
    vin = _unit(w.intent_vecs[d.intent] + INPUT_NOISE * blocks.z_in[i])
    center = w.decision_vecs[w.profile.decisions.index(d.decision)] + 0.5 * w.intent_vecs[d.intent]
    vout = _unit(center + OUTPUT_NOISE * eff.output_spread * blocks.z_out[i])
    for stream, vec, at in (("input", vin, d.started_at), ("output", vout, d.ended_at)):
        events.append(
            {
                "id": f"{tid}.emb.{stream}",
                "type": "embedding",
                "body": {
                    "stream": f"{d.agent}.{stream}",
                    "model": TEXT_MODEL,
                    "vector": vec.astype(np.float32).tolist(),
                    "trace_id": tid,
                    "created_at": iso(at),
                },
            }
        )
