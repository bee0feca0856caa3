"""Counterfactual pairs without code: a candidate-version run and a baseline-version run of
the same input identity (shadow traffic), when the project names the three.

A candidate trace with no ``counterfactual_of`` of its own gets the baseline trace of the
same agent and input hash that started last at or before it (else the first one after):
the baseline closest in time, so a replay pairs with the run it shadows. Baselines come
from this batch and from the stored traces. A candidate derived before any baseline of
its input arrived is queued again when one is derived (:func:`requeue_candidates`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from app.derive.config import Counterfactual, DerivedFieldRules
from app.models import Trace

_FAR = datetime.max


def _start(row: Mapping[str, Any] | Any) -> datetime:
    at = row.get("started_at")
    return at.replace(tzinfo=None) if at is not None else _FAR


def pair_candidates(
    conn: Connection,
    *,
    project_id: int,
    rule: Counterfactual,
    traces: list[dict[str, Any]],
    hashes: Mapping[str, str | None],
) -> dict[str, str]:
    """``{candidate trace_id: baseline trace_id}`` for the candidates among ``traces``.

    ``hashes`` is each trace's input hash after derivation (the stored one when explicit).
    """
    mine = [t for t in traces if t["agent"] == rule.agent and hashes.get(t["trace_id"])]
    candidates = [t for t in mine if t["agent_version"] == rule.candidate_version]
    if not candidates:
        return {}
    wanted = sorted({str(hashes[t["trace_id"]]) for t in candidates})
    baselines: dict[str, list[tuple[datetime, str]]] = {}
    for t in mine:
        if t["agent_version"] == rule.baseline_version:
            baselines.setdefault(str(hashes[t["trace_id"]]), []).append((_start(t), t["trace_id"]))
    for start in range(0, len(wanted), 500):
        stored = conn.execute(
            select(Trace.input_hash, Trace.started_at, Trace.trace_id).where(
                Trace.project_id == project_id,
                Trace.agent == rule.agent,
                Trace.agent_version == rule.baseline_version,
                Trace.input_hash.in_(wanted[start : start + 500]),
            )
        ).mappings()
        for row in stored:
            baselines.setdefault(row["input_hash"], []).append((_start(row), row["trace_id"]))
    pairs: dict[str, str] = {}
    for t in candidates:
        options = sorted(set(baselines.get(str(hashes[t["trace_id"]]), [])))
        if not options:
            continue
        before = [o for o in options if o[0] <= _start(t)]
        pairs[t["trace_id"]] = (before[-1] if before else options[0])[1]
    return pairs


def requeue_candidates(
    conn: Connection, *, project_id: int, rule: Counterfactual, baseline_hashes: list[str]
) -> None:
    """Queue again the derived, unpaired candidates of inputs that just got a baseline."""
    hashes = sorted(set(baseline_hashes))
    for start in range(0, len(hashes), 500):
        conn.execute(
            update(Trace)
            .where(
                Trace.project_id == project_id,
                Trace.agent == rule.agent,
                Trace.agent_version == rule.candidate_version,
                Trace.input_hash.in_(hashes[start : start + 500]),
                Trace.counterfactual_of.is_(None),
                Trace.derived_at.is_not(None),
            )
            .values(derived_at=None)
        )


def pair_batch(
    conn: Connection,
    *,
    traces: list[dict[str, Any]],
    configs: Mapping[int, DerivedFieldRules],
    hashes: Mapping[tuple[int, str], str | None],
) -> dict[tuple[int, str], str]:
    """Pairs for one batch of every project with a rule; re-queues the candidates of the
    inputs that got their first baseline here."""
    pairs: dict[tuple[int, str], str] = {}
    for project_id, config in configs.items():
        rule = config.counterfactual
        if rule is None:
            continue
        mine = [t for t in traces if t["project_id"] == project_id]
        by_id = {t["trace_id"]: hashes[(project_id, t["trace_id"])] for t in mine}
        found = pair_candidates(conn, project_id=project_id, rule=rule, traces=mine, hashes=by_id)
        pairs.update({(project_id, tid): base for tid, base in found.items()})
        baselines = [
            str(by_id[t["trace_id"]])
            for t in mine
            if t["agent"] == rule.agent
            and t["agent_version"] == rule.baseline_version
            and by_id[t["trace_id"]]
        ]
        if baselines:
            requeue_candidates(conn, project_id=project_id, rule=rule, baseline_hashes=baselines)
    return pairs
